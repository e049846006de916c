"""Request input checked by the endpoint's DRF serializer: its declaration is the one schema, compiled once
per serializer class into a plain walk over the input.

`Serializer(data=...).is_valid(raise_exception=True)` deep-copies every declared field of the serializer (and
of its nested serializers) before it checks anything, then goes through DRF's general machinery for every
value: on the busiest endpoints both cost far more than the checks themselves. `compiled` reads the
declaration once (the writable fields of a serializer, its nested serializers, `many=True` lists, list and
dict fields with a child) and builds a walk over a JSON object (anything else, a query string's QueryDict
included, goes to the serializer) that answers as `run_validation` would:

- a missing key: refused if required, else the field's default or nothing, as `validate_empty_values`;
  null: kept if `allow_null`; keys the serializer does not declare are ignored;
- a CharField of any subclass that leaves DRF's `run_validation` and empty-value rules alone: a string is
  checked inline (blank, trimming, DRF's own validators: lengths, no NUL, no lone surrogate; any other
  validator is run), a subclass's own `to_internal_value` (a strict string, a currency, a payment code) is
  still called; any other value goes to the field's `run_validation`;
- any other field that keeps DRF's `Field.run_validation` has its own `to_internal_value` called (a Decimal
  amount, a strict boolean, a price, a list field with its item limit) and its validators run; the child of
  a list or dict field is checked by its compiled walk;
- any other field is left to its own `run_validation`, a serializer with its own `to_internal_value`,
  `run_validation` or validators too (at the top, `compiled` answers None: the kept instance checks);
  `validate_<field>` and `validate` are called as DRF calls them.

The walk vouches only for what it accepts: at the first refusal anywhere it gives up and the serializer
decides, so every error carries the serializer's own detail. `validated` then runs one instance per
serializer class per thread (validation keeps no state in the instance), and for input that instance refuses
`is_valid` on a new instance, which gives exactly the detail `is_valid` gives (it rewrites a few, such as a
null body's); refusals are the rare case. core/tests/test_compiled_validation.py holds the walk of every
serializer the API validates with to the serializer on generated input.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import MaxLengthValidator, MinLengthValidator, ProhibitNullCharactersValidator
from rest_framework import fields, serializers
from rest_framework.exceptions import ValidationError
from rest_framework.fields import SkipField, empty
from rest_framework.validators import ProhibitSurrogateCharactersValidator

Check = Callable[[Any], Any]


class _Unvouched:
    def __repr__(self) -> str:
        return "UNVOUCHED"


UNVOUCHED: Any = _Unvouched()  # a compiled check's answer for input it leaves to the serializer


class _GiveUp(Exception):
    """Raised inside a compiled walk: it does not vouch for the input."""


class _Default(NamedTuple):
    get: Callable[[], Any]


_REQUIRED, _SKIP = object(), object()
_REFUSED_IN_TEXT = re.compile("[\x00\ud800-\udfff]")  # DRF's CharField validators: no NUL, no lone surrogate
_TEXT_CHARACTER_VALIDATORS = (ProhibitNullCharactersValidator, ProhibitSurrogateCharactersValidator)
# `get_value` of these classes is `dictionary.get(field_name, empty)` for a dict body of a full (not partial)
# serializer, the only kind the walk reads.
_DICT_GETTERS = frozenset(
    getter.get_value
    for getter in (
        fields.Field,
        fields.ListField,
        fields.DictField,
        serializers.Serializer,
        serializers.ListSerializer,
    )
)

_compiled: dict[type[serializers.Serializer], Check | None] = {}
_local = threading.local()


def validated(serializer_class: type[serializers.Serializer], data: Any) -> Any:
    """`serializer_class(data=data)`'s `validated_data`, or the ValidationError `is_valid` raises."""
    check = compiled(serializer_class)
    if check is not None and (values := check(data)) is not UNVOUCHED:
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


def compiled(serializer_class: type[serializers.Serializer]) -> Check | None:
    """The compiled check of `serializer_class`: the validated data of a body it vouches for, else UNVOUCHED.
    None for a serializer whose own code reads the body (its `to_internal_value`, validators...)."""
    try:
        return _compiled[serializer_class]
    except KeyError:
        pass
    # Its own instance: the walk holds these field instances (a container's child is given its compiled
    # check), which no other serializer instance shares. The walk only reads them: any thread may run it.
    walk = _walk(serializer_class())
    check = None if walk is None else partial(_run, walk)
    _compiled[serializer_class] = check
    return check


def _run(walk: Check, data: Any) -> Any:
    if type(data) is not dict:  # a form's QueryDict, a list, null: the serializer reads these
        return UNVOUCHED
    try:
        return walk(data)
    except (_GiveUp, ValidationError, DjangoValidationError):
        return UNVOUCHED


def _overrides(instance: object, base: type, names: tuple[str, ...]) -> bool:
    return any(getattr(type(instance), name) is not getattr(base, name) for name in names)


def _walk(serializer: serializers.Serializer) -> Check | None:
    """Serializer.run_validation over a dict body, or None where the serializer's own code must run."""
    own = ("run_validation", "to_internal_value", "run_validators", "validate_empty_values")
    if _overrides(serializer, serializers.Serializer, own) or serializer.validators:
        return None
    plan = []
    for field in serializer._writable_fields:
        name = field.field_name
        assert name is not None  # bound
        if len(field.source_attrs) != 1:  # source="*" or a dotted source: DRF's set_value
            return None
        getter = None if type(field).get_value in _DICT_GETTERS else field.get_value
        check = _node(field)
        if check is None:
            check = field.run_validation
            absent: Any = _Default(partial(field.run_validation, empty))
        else:
            absent = _absent(field)
        method = getattr(serializer, "validate_" + name, None)
        plan.append((name, field.source_attrs[0], getter, check, absent, method))
    validate = None if type(serializer).validate is serializers.Serializer.validate else serializer.validate

    def walk(data: dict[str, Any]) -> dict[str, Any]:
        values = {}
        for name, key, getter, check, absent, method in plan:
            value = data.get(name, empty) if getter is None else getter(data)
            try:
                if value is not empty:
                    value = check(value)
                elif absent is _REQUIRED:
                    raise _GiveUp
                elif absent is _SKIP:
                    continue
                elif type(absent) is _Default:
                    value = absent.get()
                else:
                    value = absent
                if method is not None:
                    value = method(value)
            except SkipField:
                continue
            values[key] = value
        if validate is not None and (values := validate(values)) is None:
            raise _GiveUp  # DRF asserts on it
        return values

    return walk


def _absent(field: fields.Field) -> Any:
    """What `validate_empty_values` makes of a missing key: refused, skipped, or the default."""
    if field.required:
        return _REQUIRED
    if field.default is empty:
        return _SKIP
    if callable(field.default):
        return _Default(field.get_default)
    return field.default


def _node(field: fields.Field) -> Check | None:
    """A check of a value present in the body (null included) answering as `field.run_validation`, or
    raising; None where the field's own `run_validation` must decide."""
    if isinstance(field, fields.ListField | fields.DictField | serializers.ListSerializer):
        child = field.child
        assert child is not None  # DRF asserts it too
        check = _node(child)
        if check is not None:
            # The container's own code still runs (its item limits); each item is checked by the walk.
            child.run_validation = check  # type: ignore[method-assign,assignment]
    if isinstance(field, serializers.ListSerializer):
        return _list_node(field)
    if isinstance(field, serializers.Serializer):
        return _serializer_node(field)
    if isinstance(field, serializers.BaseSerializer) or _overrides(field, fields.Field, ("run_validators",)):
        return None
    empties = type(field).validate_empty_values
    plain_empties = empties is fields.Field.validate_empty_values or (
        empties is fields.DecimalField.validate_empty_values and not field.allow_null
    )
    if not plain_empties:
        return None
    if isinstance(field, fields.CharField) and type(field).run_validation is fields.CharField.run_validation:
        return _text_node(field)
    if type(field).run_validation is fields.Field.run_validation:
        return _value_node(field)
    return None


def _serializer_node(serializer: serializers.Serializer) -> Check | None:
    walk = _walk(serializer)
    if walk is None:
        return None
    allow_null = serializer.allow_null

    def check(value: Any) -> Any:
        if type(value) is dict:
            return walk(value)
        if value is None and allow_null:
            return None
        raise _GiveUp

    return check


def _list_node(many: serializers.ListSerializer) -> Check | None:
    own = (
        "run_validation",
        "to_internal_value",
        "run_validators",
        "validate_empty_values",
        "run_child_validation",
        "validate",
    )
    if _overrides(many, serializers.ListSerializer, own) or many.validators:
        return None
    assert many.child is not None  # DRF asserts it too
    item = many.child.run_validation
    allow_null, allow_empty = many.allow_null, many.allow_empty
    lengths: Any = many  # the stubs lack min_length and max_length
    shortest = lengths.min_length or 0
    longest = sys.maxsize if lengths.max_length is None else lengths.max_length

    def check(value: Any) -> Any:
        if type(value) is not list:
            if value is None and allow_null:
                return None
            raise _GiveUp
        if not shortest <= len(value) <= longest or not (value or allow_empty):
            raise _GiveUp
        return [item(entry) for entry in value]

    return check


def _text_limits(validators: list[Any]) -> tuple[int, int] | None:
    """(min, max) length when the validators are only DRF's own for a CharField; else None."""
    shortest, longest = 0, sys.maxsize
    for validator in validators:
        kind = type(validator)
        if kind in _TEXT_CHARACTER_VALIDATORS:
            continue
        limit = getattr(validator, "limit_value", None)
        if kind is MaxLengthValidator and type(limit) is int:
            longest = min(longest, limit)
        elif kind is MinLengthValidator and type(limit) is int:
            shortest = max(shortest, limit)
        else:
            return None
    return shortest, longest


def _text_node(field: fields.CharField) -> Check:
    """CharField.run_validation: blank first, then null, the conversion, the validators."""
    allow_blank, allow_null, trim = field.allow_blank, field.allow_null, field.trim_whitespace
    own_conversion = type(field).to_internal_value is not fields.CharField.to_internal_value
    convert = field.to_internal_value
    run_validation, run_validators = field.run_validation, field.run_validators
    limits = _text_limits(field.validators)
    shortest, longest = limits or (0, 0)

    def check(value: Any) -> Any:
        if type(value) is not str:
            if value is None:
                if allow_null:
                    return None
                raise _GiveUp
            return run_validation(value)  # a number, which a plain CharField takes: its own reading
        text = value.strip() if trim else value
        if not text:
            if allow_blank:
                return ""
            raise _GiveUp
        if own_conversion:
            text = convert(value)
        if limits is None or type(text) is not str:
            run_validators(text)
        elif not shortest <= len(text) <= longest or _REFUSED_IN_TEXT.search(text):
            raise _GiveUp
        return text

    return check


def _value_node(field: fields.Field) -> Check:
    """Field.run_validation: null, then the field's own conversion and validators."""
    convert, allow_null = field.to_internal_value, field.allow_null
    run_validators = field.run_validators if field.validators else None

    def check(value: Any) -> Any:
        if value is None:
            if allow_null:
                return None
            raise _GiveUp
        result = convert(value)
        if run_validators is not None:
            run_validators(result)
        return result

    return check
