"""Request input checked by a DRF serializer, without building the serializer for every request.

`Serializer(data=...).is_valid(raise_exception=True)` deep-copies every declared field of the serializer
(and of its nested serializers) into the new instance before it checks anything: on the busiest endpoints
that copy cost more than the checks. Validation itself keeps no state in the instance, so each thread keeps
one instance per serializer class and runs its `run_validation`. Input it refuses goes through `is_valid`
on a new instance after all, so a refusal carries exactly the detail `is_valid` gives it (which rewrites a
few, such as a null body's); refusals are the rare case.

The busiest writes check their usual body directly first (`invoice_create_input`, `withdraw_input`), with
`text_accepted` for what DRF's CharField would refuse in any text, and hand anything else to `validated`.
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
