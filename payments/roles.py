"""The roles of a company's members and what each may do: the one table the dashboard guard, the API tokens
a member creates and docs/dashboard.md read.

A permission names a kind of work; a role is a set of them; each dashboard route needs one permission to be
read (GET) and one to be acted on (POST). A route missing here is refused to every role (the guard denies
by default, and tests/test_roles.py fails on a merchant route the table does not name).
"""

from __future__ import annotations

OWNER, ADMIN, FINANCE, DEVELOPER, VIEWER = "owner", "admin", "finance", "developer", "viewer"
ROLES = (OWNER, ADMIN, FINANCE, DEVELOPER, VIEWER)
ROLE_LABELS = {
    OWNER: "Owner",
    ADMIN: "Admin",
    FINANCE: "Finance",
    DEVELOPER: "Developer",
    VIEWER: "Viewer",
}

READ = "read"  # invoices, deposits, withdrawals, balances, webhook deliveries, settings as they are
INVOICES = "invoices"  # create invoices, accept underpaid ones, static addresses, claim a payment
WITHDRAWALS = "withdrawals"  # withdraw, bulk, automatic rules, cancel, refund an invoice (moves money)
APPROVE = "approve"  # approve a withdrawal the payout policy holds
POLICY = "policy"  # the payout policy and its address allowlist
SETTINGS = "settings"  # payment settings and underpayment limits
API = "api"  # API tokens, the company token, the signing secret, the webhook URL, redelivery
SANDBOX = "sandbox"  # the sandbox chain's controls (development and sandbox-only deployments)
AUDIT = "audit"  # the audit log
TEAM = "team"  # members, invitations, roles

ALL = frozenset({READ, INVOICES, WITHDRAWALS, APPROVE, POLICY, SETTINGS, API, SANDBOX, AUDIT, TEAM})
PERMISSIONS: dict[str, frozenset[str]] = {
    OWNER: ALL,
    ADMIN: ALL,
    FINANCE: frozenset({READ, INVOICES, WITHDRAWALS, APPROVE}),
    DEVELOPER: frozenset({READ, API, SANDBOX}),
    VIEWER: frozenset({READ}),
}

# Every API endpoint needs exactly one of these for each method (`required_scopes` on the view); a scope
# never implies another, so a token holds exactly what its list says.
SCOPES: dict[str, str] = {
    "invoices:read": "List and read invoices",
    "invoices:write": "Create invoices and accept underpaid ones",
    "withdrawals:read": "List and read withdrawals and the automatic withdrawal rules",
    "withdrawals:write": "Withdraw, refund invoices, change automatic withdrawals (moves money)",
    "balances:read": "Read balances",
    "addresses:write": "Get static deposit addresses",
    "webhooks:read": "List and read webhook events",
    "webhooks:write": "Redeliver webhook events",
    "settings:read": "Read company settings (underpayment limits)",
    "settings:write": "Change the webhook URL, the redirect URL and the underpayment limits",
    "sandbox": "The sandbox endpoints (deployments with the sandbox on)",
    "team": "List members and invitations, invite, change roles, remove members (owners and admins only)",
}
ALL_SCOPES = frozenset(SCOPES)

# The scopes a member's new API token may not carry: never more than the member may do in the dashboard
# (a role without API may create no token at all).
TOKEN_SCOPES_WITHHELD: dict[str, frozenset[str]] = {
    DEVELOPER: frozenset({"withdrawals:write", "team"}),  # moves money; manages people: neither is theirs
}

# dashboard route -> (permission to read it, permission to act on it)
ROUTES: dict[str, tuple[str, str]] = {
    "dashboard:overview": (READ, READ),
    "dashboard:welcome": (READ, READ),
    "dashboard:invoice_list": (READ, READ),
    "dashboard:invoice_new": (INVOICES, INVOICES),
    "dashboard:invoice_detail": (READ, READ),
    "dashboard:invoice_accept": (INVOICES, INVOICES),
    "dashboard:invoice_refund": (WITHDRAWALS, WITHDRAWALS),
    "dashboard:payment_settings": (READ, SETTINGS),
    "dashboard:underpayment_limits": (READ, SETTINGS),
    "dashboard:payment_claims": (READ, INVOICES),
    "dashboard:static_addresses": (READ, INVOICES),
    "dashboard:sandbox": (SANDBOX, SANDBOX),
    "dashboard:sandbox_deposit": (SANDBOX, SANDBOX),
    "dashboard:sandbox_mine": (SANDBOX, SANDBOX),
    "dashboard:balances": (READ, READ),
    "dashboard:ledger": (READ, READ),
    "dashboard:event_list": (READ, READ),
    "dashboard:event_detail": (READ, READ),
    "dashboard:event_redeliver": (API, API),
    "dashboard:api_settings": (API, API),
    "dashboard:token_rotate": (API, API),
    "dashboard:api_tokens": (API, API),
    "dashboard:api_token_new": (API, API),
    "dashboard:api_token_revoke": (API, API),
    "dashboard:secret_reveal": (API, API),
    "dashboard:secret_rotate": (API, API),
    "dashboard:secret_set": (API, API),
    "dashboard:webhook_url": (API, API),
    "dashboard:webhook_test": (API, API),
    "dashboard:audit_log": (AUDIT, AUDIT),
    "dashboard:audit_export": (AUDIT, AUDIT),
    "dashboard:require_2fa": (TEAM, TEAM),  # the view lets only an owner change it
    "dashboard:withdrawal_list": (READ, READ),
    "dashboard:withdrawal_export": (READ, READ),
    "dashboard:withdrawal_detail": (READ, READ),
    "dashboard:withdrawal_new": (WITHDRAWALS, WITHDRAWALS),
    "dashboard:withdrawal_bulk": (WITHDRAWALS, WITHDRAWALS),
    "dashboard:withdrawal_rules": (READ, WITHDRAWALS),
    "dashboard:withdrawal_confirm": (WITHDRAWALS, WITHDRAWALS),
    "dashboard:withdrawal_cancel": (WITHDRAWALS, WITHDRAWALS),
    "dashboard:withdrawal_approve": (APPROVE, APPROVE),
    "dashboard:withdrawal_policy": (READ, POLICY),
    "dashboard:payout_address_new": (POLICY, POLICY),
    "dashboard:payout_address_delete": (POLICY, POLICY),
    "dashboard:team": (TEAM, TEAM),
    "dashboard:team_invite": (TEAM, TEAM),
    "dashboard:team_role": (TEAM, TEAM),
    "dashboard:team_remove": (TEAM, TEAM),
    "dashboard:team_invite_revoke": (TEAM, TEAM),
    "dashboard:notification_settings": (READ, READ),  # each member their own; receipts need SETTINGS
}


def may(role: str, permission: str) -> bool:
    return permission in PERMISSIONS.get(role, frozenset())


def token_scopes(role: str) -> frozenset[str]:
    """The scopes a token made by a member of `role` may carry."""
    if not may(role, API):
        return frozenset()
    return ALL_SCOPES - TOKEN_SCOPES_WITHHELD.get(role, frozenset())


def route_permission(route: str, method: str) -> str | None:
    """What `method` on dashboard `route` needs; None: the route is not in the table (refused)."""
    needs = ROUTES.get(route)
    if needs is None:
        return None
    read, act = needs
    return read if method in ("GET", "HEAD", "OPTIONS") else act
