"""pydantic's validator and serializer called directly, for the pipeline's own models.

``model_validate``, ``model_dump``, ``model_dump_json`` and ``model_copy`` pass every default on by keyword
and look up the model's config: ~4-8 k instructions a call around the work pydantic-core does, on calls a
record makes a few dozen times. These make the same calls themselves. A workflow's own models keep the
methods: a workflow may override them.
"""

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

_PLAIN_MODELS: dict[type[BaseModel], bool] = {}
"""Whether a model validates and dumps as ``BaseModel`` does, by model (a deployment's few types)."""


def plain_model(model: type[BaseModel]) -> bool:
    """``model`` overrides neither ``model_validate`` nor ``model_dump``: their direct calls (``validated``,
    ``json_values``) are the same, ~9 k instructions less a payload. A workflow's model may override them."""
    plain = _PLAIN_MODELS.get(model)
    if plain is None:
        plain = _PLAIN_MODELS[model] = (
            getattr(model.model_validate, "__func__", None) is BaseModel.model_validate.__func__  # type: ignore[attr-defined]
            and model.model_dump is BaseModel.model_dump
        )
    return plain


def json_values(model: BaseModel, *, exclude: set[str] | None = None) -> dict[str, Any]:
    """``model.model_dump(mode="json", exclude=exclude)``, from the model's serializer itself (the method's
    own work costs ~7k instructions a call, a fifth of an envelope's dump)."""
    values: dict[str, Any] = model.__pydantic_serializer__.to_python(model, mode="json", exclude=exclude)
    return values


def dumped_json(model: BaseModel) -> dict[str, Any]:
    """``model.model_dump(mode="json")`` as the model dumps itself: by its serializer directly when its
    class is ``plain_model``, else by the method a workflow's model overrides."""
    return json_values(model) if plain_model(type(model)) else model.model_dump(mode="json")


def json_text_of(model: BaseModel, *, exclude: set[str] | None = None) -> str:
    """``model.model_dump_json(exclude=exclude)``, from the model's serializer itself (the method passes
    every one of its defaults on by keyword: ~7 k instructions a call)."""
    text: bytes = model.__pydantic_serializer__.to_json(model, exclude=exclude)
    return text.decode()


if TYPE_CHECKING:  # made only for the type checker: a TypeVar costs every stage's cold start
    from typing import TypeVar

    _Model = TypeVar("_Model", bound=BaseModel)


def validated(model: "type[_Model]", value: Any) -> "_Model":
    """``model.model_validate(value)``, by the model's validator itself (~5 k instructions less a call).
    Only for the pipeline's own models: a workflow's model may define its own ``model_validate``."""
    made: _Model = model.__pydantic_validator__.validate_python(value)
    return made


def model_validated(model: "type[_Model]", value: Any) -> "_Model":
    """``model.model_validate(value)`` as the model validates: by its validator directly when it is
    ``plain_model``, else by the method a workflow's model overrides."""
    return validated(model, value) if plain_model(model) else model.model_validate(value)


def validated_json(model: "type[_Model]", text: str | bytes) -> "_Model":
    """``model.model_validate_json(text)``, by the model's validator itself (~4 k instructions less a
    call); the pipeline's own models only, as ``validated``."""
    made: _Model = model.__pydantic_validator__.validate_json(text)
    return made


def shallow_copy(model: "_Model", update: Mapping[str, Any] | None) -> "_Model":
    """``model.model_copy(update=update)`` as pydantic makes it (``BaseModel.__copy__``, then the update
    unvalidated), for a model without extra fields or private attributes, made directly: pydantic's path
    (``__copy__``'s three ``copy.copy`` calls, the config looked up) cost ~8 k instructions more a copy,
    and a record's stages copy an envelope or a run's state once or more. A model holding extra fields or
    private attributes is copied by pydantic."""
    if model.__pydantic_extra__ is not None or getattr(model, "__pydantic_private__", None) is not None:
        return BaseModel.model_copy(model, update=update)
    cls = type(model)
    made = cls.__new__(cls)
    values = model.__dict__.copy()
    fields_set = set(model.__pydantic_fields_set__)
    if update:
        values.update(update)
        fields_set.update(update.keys())
    _set = object.__setattr__
    _set(made, "__dict__", values)
    _set(made, "__pydantic_extra__", None)
    _set(made, "__pydantic_fields_set__", fields_set)
    _set(made, "__pydantic_private__", None)
    return made
