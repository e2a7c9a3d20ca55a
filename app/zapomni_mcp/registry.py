"""Tools: one module each, declaring name, description, input and output models and `execute`."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Generic, TypeVar

import mcp_types as types
from pydantic import BaseModel

from zapomni_core import RequestContext, Role, ZapomniCore

InputT = TypeVar("InputT", bound=BaseModel)
OutputT = TypeVar("OutputT", bound=BaseModel)


class Tool(ABC, Generic[InputT, OutputT]):
    """A tool holds the engine it was given at start-up; `execute` validates nothing itself."""

    name: ClassVar[str]
    description: ClassVar[str]
    input_model: ClassVar[type[BaseModel]]
    output_model: ClassVar[type[BaseModel]]
    annotations: ClassVar[types.ToolAnnotations | None] = None
    # What a token needs to call it over HTTP: read < write < admin (stdio's local owner may do anything).
    role: ClassVar[Role]

    def __init__(self, core: ZapomniCore) -> None:
        self.core = core

    @abstractmethod
    async def execute(self, arguments: InputT, ctx: RequestContext) -> OutputT: ...

    @staticmethod
    @abstractmethod
    def render(result: Any) -> str:
        """A readable text block beside the structured result."""

    async def workspace(self, arguments: Mapping[str, Any], default: str) -> str | None:
        """The workspace a call would act on, found before it runs so that it can be authorised; None: no
        single one. Tools that take `workspace` act on it, or on the server's default without one."""
        return named(arguments.get("workspace"), default)

    @classmethod
    def definition(cls) -> types.Tool:
        # Nothing a tool does reaches outside this machine's store.
        annotations = (cls.annotations or types.ToolAnnotations()).model_copy(update={"open_world_hint": False})
        return types.Tool(
            name=cls.name,
            description=cls.description,
            input_schema=json_schema(cls.input_model),
            output_schema=json_schema(cls.output_model),
            annotations=annotations,
        )


class ToolCatalog:
    """The tools' names, definitions and input models: known before the engine they act on is open."""

    def __init__(self, tools: Iterable[type[Tool[Any, Any]]]) -> None:
        self._classes = {tool.name: tool for tool in tools}
        # Built once: a schema costs milliseconds, and over HTTP the SDK checks each call's argument headers
        # against its tool's input schema.
        self._definitions = [tool.definition() for tool in self._classes.values()]
        self._input_schemas = {d.name: d.input_schema for d in self._definitions}

    def get(self, name: str) -> type[Tool[Any, Any]] | None:
        return self._classes.get(name)

    def names(self) -> list[str]:
        return list(self._classes)

    def definitions(self) -> list[types.Tool]:
        return list(self._definitions)

    def input_schema(self, name: str) -> dict[str, Any] | None:
        return self._input_schemas.get(name)


class ToolRegistry:
    """The tools acting on one engine."""

    def __init__(self, tools: Iterable[Tool[Any, Any]], catalog: ToolCatalog | None = None) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self.catalog = catalog or ToolCatalog(type(tool) for tool in self._tools.values())

    def get(self, name: str) -> Tool[Any, Any] | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return list(self._tools)


def named(value: Any, default: str) -> str:
    """A workspace argument as given (a non-string one names no workspace a token may hold)."""
    if value is None:
        return default
    return value if isinstance(value, str) else repr(value)


def json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The model's JSON schema with every `$ref` inlined: several MCP clients do not resolve `$defs`."""
    schema = model.model_json_schema()
    definitions = schema.pop("$defs", {})

    def inline(node: Any) -> Any:
        if isinstance(node, dict):
            if "$ref" in node:
                target = definitions[node["$ref"].rsplit("/", 1)[-1]]
                return inline({**target, **{k: v for k, v in node.items() if k != "$ref"}})
            return {key: inline(value) for key, value in node.items()}
        if isinstance(node, list):
            return [inline(item) for item in node]
        return node

    inlined: dict[str, Any] = inline(schema)  # a dict in, a dict out
    return inlined
