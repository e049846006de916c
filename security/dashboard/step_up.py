"""The step-up in the dashboard: `step_up_required` guards a view with a fresh confirmation (security.stepup).

An action refused for want of it (a POST) is kept, not lost: the step-up page is shown in its place and
posts the action again with the secret, so once confirmed it is done and its result shown at once. A page
(GET) sends the browser to the step-up page, which brings it back afterwards.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render

from payments.models import Company
from security.dashboard.forms import StepUpForm
from security.stepup import come_back_to, confirm, is_fresh, is_locked, locked_message, safe_next, step_up_url
from security.totp import has_totp

# The step-up form shown in place of an action: its fields are prefixed so that they never meet the
# action's own (the signing-secret form has a `secret` too).
PREFIX = "step_up"
SECRET_FIELD = f"{PREFIX}-secret"

V = TypeVar("V", bound=Callable[..., Any])


def form_confirms(request: HttpRequest, form: StepUpForm, *, with_code: bool) -> int:
    """0 when the step-up form was posted with the owner's secret (the session is then fresh); else the
    status of the page that shows the form again, with the reason on it."""
    if not form.is_bound:
        return 200
    if not form.is_valid():
        return 400
    if confirm(request, form.cleaned_data["secret"]):
        return 0
    if is_locked(request):
        form.add_error(None, locked_message())
        return 429
    wrong = "That is neither your password nor a current code." if with_code else "That is not your password."
    form.add_error("secret", wrong)
    return 400


def step_up_page(
    request: HttpRequest, company: Company | None, form: StepUpForm, *, status: int, **context: Any
) -> HttpResponse:
    page = {
        "company": company,
        "nav": "",  # reached from any page: no section of the navigation is current
        "form": form,
        "next_url": safe_next(request, form["next"].value()),
        "with_code": has_totp(request.user),
        **context,
    }
    return render(request, "security/security_step_up.html", page, status=status)


def _confirm_in_place(request: HttpRequest, company: Company | None) -> HttpResponse | None:
    """None once the secret posted along with the action confirms it is the owner (the action then runs);
    else the step-up page in the action's place, its form posting the action again with every field it
    carried. Cancel goes back to the page the action was sent from."""
    hidden = getattr(request, "sensitive_post_parameters", [])
    if hidden != "__ALL__":  # never in an error report (django.views.debug)
        request.sensitive_post_parameters = [*hidden, SECRET_FIELD]  # type: ignore[attr-defined]
    with_code = has_totp(request.user)
    back = come_back_to(request)
    data = request.POST if SECRET_FIELD in request.POST else None
    form = StepUpForm(data, with_code=with_code, prefix=PREFIX, initial={"next": back})
    status = form_confirms(request, form, with_code=with_code)
    if status == 0:
        return None
    carried = [
        (name, value)
        for name, values in request.POST.lists()
        if name != "csrfmiddlewaretoken" and not name.startswith(f"{PREFIX}-")
        for value in values
    ]
    return step_up_page(
        request, company, form, status=status, action_url=request.get_full_path(), carried=carried
    )


def step_up_required(view: V) -> V:
    """Dashboard views (under @merchant_view or plain): without a fresh confirmation nothing runs. A page
    (GET) sends the browser (303) to the step-up page, which brings it back afterwards; an action (POST)
    gets the step-up page in its place and is carried out as soon as the secret posted with it is right."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if is_fresh(request):
            return view(request, *args, **kwargs)
        if request.method != "POST":
            response = HttpResponseRedirect(step_up_url(come_back_to(request)))
            response.status_code = 303
            return response
        company = args[0] if args and isinstance(args[0], Company) else None
        refused = _confirm_in_place(request, company)
        return view(request, *args, **kwargs) if refused is None else refused

    return wrapped  # type: ignore[return-value]
