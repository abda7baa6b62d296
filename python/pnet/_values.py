"""Values of nets as Python objects: :class:`Struct` and :class:`Tokens`."""

from __future__ import annotations

from typing import Any, Iterator


class Struct:
    """A struct value: its fields as attributes, in order (dataclass-like).

    ``Struct(x=1, y=2).x == 1``; ``_asdict()`` gives the fields as a dict, ``_fields`` their
    names. Structs compare by their fields, print as ``Struct(x=1, y=2)`` and are hashable
    when their fields are (structs inside sets and map keys are). To pass a struct to a net,
    use a ``Struct``, a dict or a dataclass instance with the struct's fields.
    """

    __slots__ = ("_values",)

    def __init__(self, **fields: Any) -> None:
        object.__setattr__(self, "_values", dict(fields))

    @property
    def _fields(self) -> tuple[str, ...]:
        return tuple(self._values)

    def _asdict(self) -> dict[str, Any]:
        """The fields as a new dict, in order."""
        return dict(self._values)

    def __getattr__(self, name: str) -> Any:
        try:
            return object.__getattribute__(self, "_values")[name]
        except KeyError:
            raise AttributeError(
                f"the struct has no field `{name}` (it has: {', '.join(self._values)})"
            ) from None

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._values:
            raise AttributeError(f"the struct has no field `{name}`")
        self._values[name] = value

    def __getitem__(self, name: str) -> Any:
        return self._values[name]

    def __iter__(self) -> Iterator[tuple[str, Any]]:
        return iter(self._values.items())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Struct):
            return self._values == other._values
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._values.items()))

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self._values.items())
        return f"Struct({inner})"


class Tokens(list):
    """Several tokens for one in port: ``{"n": pnet.Tokens([1, 2, 3])}`` puts three tokens
    on ``n`` (a plain list would be one token of a list type)."""
