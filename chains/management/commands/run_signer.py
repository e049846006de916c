import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from chains.evm.signer import serve, unseal
from chains.signers import SeedMismatch, SeedSigner


class Command(BaseCommand):
    help = (
        "The signer process: opens the sealed seed (--seed-file, passphrase from KASSA_SIGNER_PASSPHRASE), "
        "checks it is the seed behind CHAIN_XPUBS['evm'], ['tron'], ['ton'], ['sol'] and ['near'], and signs "
        "only what the database's stored plans allow, on a Unix socket (--socket)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--seed-file", required=True, help="the file `manage.py signer_seed` wrote")
        parser.add_argument("--socket", required=True, help="the Unix socket to listen on")
        parser.add_argument(
            "--journal",
            help="the signer's own record of what it signed (default: signer-journal.sqlite3 beside the seed "
            "file); keep it with the seed, never where the web or the workers can write",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        passphrase = os.environ.pop("KASSA_SIGNER_PASSPHRASE", "")
        try:
            mnemonic = unseal(Path(options["seed_file"]).read_bytes(), passphrase)
        except (OSError, ValueError) as exc:
            raise CommandError(str(exc)) from exc
        seed_file = Path(options["seed_file"])
        journal = options["journal"] or str(seed_file.with_name("signer-journal.sqlite3"))
        try:
            signer = SeedSigner(mnemonic, journal)
        except SeedMismatch as exc:
            raise CommandError(str(exc)) from exc
        finally:
            del mnemonic
        hot = ", ".join(f"{family} {address}" for family, address in signer.hot_addresses().items())
        self.stdout.write(f"signer ready: hot addresses {hot}, socket {options['socket']}, journal {journal}")
        self.stdout.flush()
        try:
            serve(signer, options["socket"])
        except KeyboardInterrupt:
            self.stdout.write("signer stopped")
