"""Named API tokens: scopes, client networks, issue and revoke, and the throttled "last used" stamp.

A company has its own token (Company.token_hash, `kassa_pk_...`, every scope) and any number of named
tokens (ApiToken, `kassa_tk_...`), each limited to the scopes it was given and, optionally, to client
networks. The prefix tells the authenticator which one table to look in (docs/security.md).
"""

from __future__ import annotations

import ipaddress
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any
from uuid import UUID

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from core.errors import FieldError, NotFound, ValidationFailed
from payments.models import ApiToken, Company
from payments.roles import ALL_SCOPES as ALL_SCOPES
from payments.roles import SCOPES as SCOPES
from payments.services import token_hash

SCOPED_TOKEN_PREFIX = "kassa_tk_"  # noqa: S105 - a prefix, not a secret

# The scopes live beside the roles that cap them (payments.roles); named here too, where tokens are made.

NAME_MAX = ApiToken._meta.get_field("name").max_length or 100
MAX_NETWORKS = 32
MAX_LIVE_TOKENS = 50
# "Last used" is a day-to-day hint for people, not an access log: a write per token per minute at most.
TOUCH_EVERY = timedelta(minutes=1)
# Called with each new token in its creation's transaction (notifications registers its e-mail to members).
token_created_hooks: list[Callable[[ApiToken], None]] = []


def _now() -> datetime:
    """The clock of "last used" (tests move it)."""
    return timezone.now()


@dataclass(frozen=True)
class TokenSpec:
    name: str
    scopes: list[str]  # in SCOPES order
    allowed_networks: list[str]  # normalised CIDRs, in the order given, without repeats


@dataclass(frozen=True)
class IssuedToken:
    token: ApiToken
    secret: str  # the only time it is seen in clear


# --- Rules (the dashboard form and the command call them too) --------------------------------------------


def parse_network(text: str) -> str:
    """A CIDR (or a single address) as its normal form; ValueError with a message for a person."""
    value = text.strip()
    try:
        return str(ipaddress.ip_network(value, strict=True))
    except ValueError as exc:
        loose = _loose_network(value)
        if loose is not None:
            raise ValueError(
                f"{value} has bits set after the /{loose.prefixlen}: write {loose} for the network, "
                f"or {value.partition('/')[0]} alone for the one address."
            ) from exc
        raise ValueError(f"{value[:60]!r} is not an IPv4 or IPv6 address or network (CIDR).") from exc


def _loose_network(value: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(value, strict=False)
    except ValueError:
        return None


def api_token_rules_check(*, name: str, scopes: Iterable[str], allowed_networks: Iterable[str]) -> TokenSpec:
    """The token as it will be stored, or ValidationFailed naming every wrong field."""
    errors: list[FieldError] = []
    name = (name or "").strip()
    if not name:
        errors.append(FieldError("name", "required", "Give the token a name, e.g. where it is used."))
    elif len(name) > NAME_MAX:
        errors.append(FieldError("name", "max_length", f"At most {NAME_MAX} characters."))
    elif not name.isprintable():
        errors.append(FieldError("name", "invalid", "Use printable characters only."))
    wanted = [scope.strip() for scope in scopes]
    unknown = sorted({scope for scope in wanted if scope not in SCOPES})
    if unknown:
        listed = ", ".join(repr(scope[:40]) for scope in unknown[:5])
        errors.append(
            FieldError("scopes", "invalid", f"Unknown scope {listed}; the scopes are: {', '.join(SCOPES)}.")
        )
    elif not wanted:
        errors.append(FieldError("scopes", "required", "Choose at least one scope."))
    networks: list[str] = []
    for line in allowed_networks:
        if not line.strip():
            continue
        try:
            network = parse_network(line)
        except ValueError as exc:
            errors.append(FieldError("allowed_networks", "invalid", str(exc)))
            continue
        if network not in networks:
            networks.append(network)
    if len(networks) > MAX_NETWORKS:
        errors.append(FieldError("allowed_networks", "too_many", f"At most {MAX_NETWORKS} networks."))
    if errors:
        raise ValidationFailed(errors)
    return TokenSpec(
        name=name, scopes=[scope for scope in SCOPES if scope in wanted], allowed_networks=networks
    )


# --- Writes --------------------------------------------------------------------------------------------


def _display_prefix(secret: str) -> str:
    return secret[: len(SCOPED_TOKEN_PREFIX) + 4]


def _duplicate_name(name: str) -> ValidationFailed:
    return ValidationFailed(
        [FieldError("name", "already_exists", f"A live token is already named {name!r}.")]
    )


@transaction.atomic
def api_token_create(
    *,
    company_id: UUID | str,
    name: str,
    scopes: Iterable[str],
    allowed_networks: Iterable[str] = (),
    created_by: Any = None,
) -> IssuedToken:
    """Issue a named token; its clear text is returned once and only its hash is kept. `created_by`: the
    member who asked for it (None: the command line); what a member's role allows is the caller's check
    (payments.roles.token_scopes)."""
    spec = api_token_rules_check(name=name, scopes=scopes, allowed_networks=allowed_networks)
    # The company row lock orders concurrent creations, so the live-token cap and the name check hold.
    company = Company.objects.select_for_update().get(pk=company_id)
    live = ApiToken.objects.filter(company=company, revoked_at__isnull=True)
    if live.filter(name=spec.name).exists():
        raise _duplicate_name(spec.name)
    if live.count() >= MAX_LIVE_TOKENS:
        raise ValidationFailed(
            [FieldError("name", "too_many", f"At most {MAX_LIVE_TOKENS} live tokens; revoke one first.")]
        )
    secret = SCOPED_TOKEN_PREFIX + secrets.token_urlsafe(32)
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                company=company,
                name=spec.name,
                token_hash=token_hash(secret),
                token_prefix=_display_prefix(secret),
                scopes=spec.scopes,
                allowed_networks=spec.allowed_networks,
                created_by=created_by,
            )
    except IntegrityError as exc:  # the partial unique index, should the lock ever be bypassed
        raise _duplicate_name(spec.name) from exc
    for hook in token_created_hooks:
        hook(token)
    return IssuedToken(token=token, secret=secret)


@transaction.atomic
def api_token_revoke(*, company_id: UUID | str, token_id: int) -> tuple[ApiToken, bool]:
    """The token stops working at commit; True when this call revoked it (False: it already was).
    Another company's token is not found."""
    in_range = 0 < token_id < 2**63  # a URL's digits beyond the column's range are no token, not a 500
    token = (
        ApiToken.objects.select_for_update().filter(company_id=company_id, pk=token_id).first()
        if in_range
        else None
    )
    if token is None:
        raise NotFound("No such token.")
    if token.revoked_at is not None:
        return token, False
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    return token, True


def api_token_describe(token: ApiToken) -> str:
    """One line for the audit log and the command: never the token, only what the dashboard shows."""
    networks = ", ".join(token.allowed_networks) or "any address"
    return f"{token.name} ({token.token_prefix}…): {' '.join(token.scopes)}; from {networks}"


def _due(last_used_at: datetime | None, now: datetime) -> bool:
    return last_used_at is None or now - last_used_at >= TOUCH_EVERY


def api_token_touch(token: ApiToken) -> None:
    """Stamp "last used" when the stamp read by the authentication query is a minute old or more. The
    UPDATE re-checks it, so processes racing on the same token change the row once."""
    now = _now()
    if not _due(token.last_used_at, now):
        return
    stale = Q(last_used_at__isnull=True) | Q(last_used_at__lte=now - TOUCH_EVERY)
    ApiToken.objects.filter(stale, pk=token.pk).update(last_used_at=now)


def company_token_touch(company: Company) -> None:
    """The same for the company's own token (QuerySet.update leaves `updated_at` alone: use is no edit)."""
    now = _now()
    if not _due(company.token_last_used_at, now):
        return
    stale = Q(token_last_used_at__isnull=True) | Q(token_last_used_at__lte=now - TOUCH_EVERY)
    Company.objects.filter(stale, pk=company.pk).update(token_last_used_at=now)


# --- Client networks -----------------------------------------------------------------------------------

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=1024)
def _networks(allowed: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(network, strict=False) for network in allowed)


def network_allows(allowed: Iterable[str], client: str) -> bool:
    """Whether the client address is inside one of the allowed networks. An address that is not one
    (a proxy header's garbage) is outside all of them; an IPv4 client seen as IPv6 (`::ffff:a.b.c.d`, a
    dual-stack listener) is checked as the IPv4 address it is."""
    try:
        address = ipaddress.ip_address(client.strip())
    except ValueError:
        return False
    candidates: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = [address]
    if isinstance(address, ipaddress.IPv6Address):
        if address.scope_id:
            candidates = [ipaddress.IPv6Address(str(address).partition("%")[0])]
        if address.ipv4_mapped is not None:
            candidates.append(address.ipv4_mapped)
    return any(
        candidate in network
        for network in _networks(tuple(allowed))
        for candidate in candidates
        if candidate.version == network.version
    )
