"""Sign-up by e-mail: nothing is created until the owner of the address follows the link (docs/security.md).

The sign-up form answers the same for a new address and for one that has an account ("we sent a link to
..."), so it tells nobody which addresses have accounts. A new address gets a signed link, valid once and for
24 hours, to a page that asks for the chosen password again and then creates the merchant; an address with
an account gets a mail saying that someone tried to sign up with it. The pending sign-up (company name,
e-mail, password hash; never the password) waits in the shared cache under a random id, and the link carries
only that id, signed with its time (django.core.signing).
"""

from __future__ import annotations

import logging
import secrets
import smtplib
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import check_password, make_password
from django.core import signing
from django.core.cache import cache
from django.core.mail import EmailMessage
from django.db import transaction
from django.db.models import Q
from django.template.loader import render_to_string
from django.urls import reverse

from core.errors import ValidationFailed
from payments.services import MerchantCredentials, merchant_create

SIGNUP_LINK_SECONDS = 24 * 3600
_SALT = "kassa.signup"
_PENDING = "signup:pending:"

logger = logging.getLogger("kassa.signup")


class SignupLinkInvalid(Exception):
    """The link expired, was used, was never ours, or its address got an account since."""


class SignupPasswordWrong(Exception):
    """The password typed on the confirmation page is not the one chosen at sign-up."""


@dataclass(frozen=True)
class PendingSignup:
    name: str
    email: str
    password_hash: str


def signup_request(*, name: str, email: str, password: str) -> None:
    """Mail `email` either its confirmation link (a new address) or a note that someone tried to sign up
    with it (an address with an account). Both take about the same time: the password is hashed first,
    whichever it is, and each sends one mail."""
    email = email.strip().lower()
    password_hash = make_password(password)
    users = get_user_model()._default_manager.filter(Q(username__iexact=email) | Q(email__iexact=email))
    if users.exists():
        context: dict[str, Any] = {
            "email": email,
            "login_url": _absolute(reverse("dashboard:login")),
            "reset_url": _absolute(reverse("dashboard:password_reset")),
        }
        _send("registration/signup_exists", email, context)
        return
    pending_id = secrets.token_urlsafe(24)
    pending = {"name": name, "email": email, "password_hash": password_hash}
    # The entry outlives the signature by a minute: the signature's age decides, not the cache.
    cache.set(_PENDING + pending_id, pending, timeout=SIGNUP_LINK_SECONDS + 60)
    token = signing.TimestampSigner(salt=_SALT).sign(pending_id)
    context = {
        "email": email,
        "link": _absolute(reverse("dashboard:signup_confirm", kwargs={"token": token})),
        "hours": SIGNUP_LINK_SECONDS // 3600,
    }
    _send("registration/signup", email, context)


def signup_pending(*, token: str) -> PendingSignup | None:
    """The sign-up a link stands for, while the link is good (signed by us, under 24 hours, unused)."""
    pending_id = _pending_id(token)
    data = cache.get(_PENDING + pending_id) if pending_id else None
    if not isinstance(data, dict):
        return None
    return PendingSignup(name=data["name"], email=data["email"], password_hash=data["password_hash"])


def signup_confirm(*, token: str, password: str) -> MerchantCredentials:
    """Create the merchant of a good link, with the password chosen at sign-up (typed again here, so a
    link mailed to someone who never signed up creates nothing by being clicked). The link works once:
    of two requests with it, the one that removes the pending entry creates the merchant."""
    pending_id = _pending_id(token)
    pending = signup_pending(token=token)
    if pending_id is None or pending is None:
        raise SignupLinkInvalid
    if not check_password(password, pending.password_hash):
        raise SignupPasswordWrong
    if not cache.delete(_PENDING + pending_id):
        raise SignupLinkInvalid
    with transaction.atomic():
        try:
            credentials = merchant_create(name=pending.name, email=pending.email, password=None)
        except ValidationFailed as exc:  # the address got an account since (another link, create_merchant)
            raise SignupLinkInvalid from exc
        owner = credentials.company.owner
        owner.password = pending.password_hash
        owner.save(update_fields=["password"])
    return credentials


def _pending_id(token: str) -> str | None:
    try:
        return signing.TimestampSigner(salt=_SALT).unsign(str(token)[:256], max_age=SIGNUP_LINK_SECONDS)
    except signing.BadSignature:  # also SignatureExpired
        return None


def _absolute(path: str) -> str:
    return f"{settings.BASE_URL}{path}"


def _send(template: str, email: str, context: dict[str, Any]) -> None:
    subject = render_to_string(f"{template}_subject.txt", context).strip()
    body = render_to_string(f"{template}_email.txt", context)
    try:
        EmailMessage(subject, body, to=[email]).send()
    except (OSError, smtplib.SMTPException):
        # The page answers the same either way; the operator learns from the log that mail is not leaving.
        logger.exception("a sign-up mail could not be sent")
