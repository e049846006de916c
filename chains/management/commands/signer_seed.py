import os
import sys
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chains.evm.signer import seal
from chains.seed_keys import line


class Command(BaseCommand):
    help = (
        "Seal the seed for the signer: reads a BIP-39 mnemonic from standard input and writes it to "
        "--seed-file encrypted under the passphrase in KASSA_SIGNER_PASSPHRASE (scrypt + AES-256-GCM), then "
        "prints the CHAIN_XPUBS its keys give (public keys only)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed-file", required=True, help="where the sealed seed is written (mode 0600)")

    def handle(self, *args: Any, **options: Any) -> None:
        passphrase = os.environ.get("KASSA_SIGNER_PASSPHRASE", "")
        target = Path(options["seed_file"])
        if target.exists():
            raise CommandError(f"{target} exists; a seed file is never overwritten")
        mnemonic = " ".join(sys.stdin.read().split())
        try:
            blob = seal(mnemonic, passphrase)
        except ValueError as exc:
            raise CommandError(f"{exc} (the passphrase comes from KASSA_SIGNER_PASSPHRASE)") from exc
        descriptor = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "wb") as out:
            out.write(blob)
        self.stdout.write(f"sealed seed written to {target}; back up this file AND the passphrase, apart")
        # Public keys only: what the web and the workers are configured with (keep the families you use).
        self.stdout.write(line(mnemonic))
