"""Request input checked by a DRF serializer, without building the serializer for every request.

`Serializer(data=...).is_valid(raise_exception=True)` deep-copies every declared field of the serializer
(and of its nested serializers) into the new instance before it checks anything: on the busiest endpoints
that copy cost more than the checks. Validation itself keeps no state in the instance, so each thread keeps
one instance per serializer class and runs its `run_validation`. Input it refuses goes through `is_valid`
on a new instance after all, so a refusal carries exactly the detail `is_valid` gives it (which rewrites a
few, such as a null body's); refusals are the rare case.

A serializer class may also carry a `direct_check(data)`: the same checks for its usual input written out
plainly, which answers the validated data, or None for anything it does not vouch for (other keys, other
types, anything refused). `validated` runs it first and the serializer only when it answers None, so every
refusal still carries the serializer's own detail. The busiest writes have one (the invoice create and the
withdrawal); `text_accepted` is what DRF's CharField refuses in any text. Each direct check has a test that
holds it to the serializer's answer on generated input.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from rest_framework import serializers
from rest_framework.exceptions import ValidationError

_local = threading.local()
_REFUSED_IN_TEXT = re.compile("[\x00\ud800-\udfff]")


def text_accepted(value: str) -> bool:
    """What DRF's CharField validators let through: no NUL character, no lone surrogate."""
    return _REFUSED_IN_TEXT.search(value) is None


def validated(serializer_class: type[serializers.Serializer], data: Any) -> Any:
    """`serializer_class(data=data)`'s `validated_data`, or the ValidationError `is_valid` raises."""
    direct_check = getattr(serializer_class, "direct_check", None)
    if direct_check is not None and (values := direct_check(data)) is not None:
        return values
    instances: dict[type, serializers.Serializer] = _local.__dict__.setdefault("instances", {})
    serializer = instances.get(serializer_class)
    if serializer is None:
        serializer = instances[serializer_class] = serializer_class()
    try:
        return serializer.run_validation(data)
    except ValidationError:
        pass
    fresh = serializer_class(data=data)
    fresh.is_valid(raise_exception=True)
    return fresh.validated_data  # the same checks pass here only if they changed between the two calls
