"""The agent builder: a capability's config form drawn from its JSON Schema as `GET /api/v1/capabilities` serves it,
the form read back into a config, judged by the rules `gateway check` applies, and shown as gateway.yaml.

Nothing here names a capability: a capability added to the registry gets a form from its schema alone."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from capabilities.registry import Registry
from gateway.checks.validation import apply_problems
from gateway.config.schema import GatewayConfig, reference_problems
from gateway.config.source import ConfigSource, parse_problem

Widget = Literal["text", "number", "boolean", "choice", "lines", "yaml"]
PREFIX = "config."
"""Form fields of the capability's config are named `config.<property>`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FormField:
    name: str
    widget: Widget
    label: str
    description: str = ""
    default: str = ""
    """The schema's default, as the form shows it (the field is left empty to keep it)."""
    choices: tuple[str, ...] = ()
    required: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Built:
    """What the builder made of a submitted form."""

    entry: dict[str, Any]
    fragment: str
    """The gateway.yaml lines of the agent's new `capabilities` entry."""
    problems: list[str]
    """As `gateway check` words them; empty: the entry can be applied."""
    config: GatewayConfig | None = None
    """The whole config with the entry in place, when it validates."""


def form_fields(schema: Mapping[str, Any]) -> list[FormField]:
    """One field per property of a config's JSON Schema, its widget chosen by the property's type; what a flat
    widget cannot hold (objects, lists of objects, unions) is written as YAML."""
    required = set(schema.get("required", ()))
    definitions = schema.get("$defs", {})
    return [_field(name, _resolved(prop, definitions), name in required)
            for name, prop in schema.get("properties", {}).items()]


def _resolved(prop: Mapping[str, Any], definitions: Mapping[str, Any]) -> Mapping[str, Any]:
    """A property with its `$ref` followed, and `X | None` read as `X` (leaving a field empty means its default)."""
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return {**definitions.get(ref.removeprefix("#/$defs/"), {}), **{k: v for k, v in prop.items() if k != "$ref"}}
    options = [option for option in prop.get("anyOf", ()) if option.get("type") != "null"]
    if len(options) == 1 and len(prop.get("anyOf", ())) == 2:
        return {**_resolved(options[0], definitions), **{k: v for k, v in prop.items() if k != "anyOf"}}
    return prop


def _field(name: str, prop: Mapping[str, Any], required: bool) -> FormField:
    kind = prop.get("type")
    listed = prop.get("items")
    items: Mapping[str, Any] = listed if isinstance(listed, Mapping) else {}
    widget: Widget
    choices: tuple[str, ...] = ()
    if "enum" in prop:
        widget, choices = "choice", tuple(str(value) for value in prop["enum"])
    elif kind == "boolean":
        widget = "boolean"
    elif kind in ("integer", "number"):
        widget = "number"
    elif kind == "string":
        widget = "text"
    elif kind == "array" and items.get("type") in ("string", "integer", "number") and "enum" not in items:
        widget = "lines"
    else:
        widget = "yaml"
    default = prop.get("default")
    shown = "" if default is None else (json.dumps(default) if widget in ("yaml", "boolean") else
                                        "\n".join(map(str, default)) if isinstance(default, list) else str(default))
    return FormField(name=name, widget=widget, label=prop.get("title") or name, description=prop.get("description", ""),
                     default=shown, choices=choices, required=required)


def config_from_form(fields: list[FormField], form: Mapping[str, str]) -> tuple[dict[str, Any], list[str]]:
    """The config the form says, each value as YAML would give it (a number where it reads as one, else the text
    as typed, so a wrong value meets the same refusal it would in gateway.yaml); empty fields keep their default.
    Returns the config and the fields that could not be read at all."""
    config: dict[str, Any] = {}
    unreadable: list[str] = []
    for field in fields:
        raw = (form.get(PREFIX + field.name) or "").strip()
        if not raw:
            continue
        if field.widget == "lines":
            config[field.name] = [_scalar(line.strip()) for line in raw.splitlines() if line.strip()]
        elif field.widget in ("number", "boolean", "choice"):
            config[field.name] = _scalar(raw)
        elif field.widget == "yaml":
            try:
                config[field.name] = yaml.safe_load(raw)
            except yaml.YAMLError as exc:
                unreadable.append(f"config.{field.name}: not readable as YAML ({str(exc).splitlines()[0]})")
        else:
            config[field.name] = raw
    return config, unreadable


def _scalar(raw: str) -> Any:
    """`raw` as a YAML scalar reads: `3` a number, `true` a boolean, anything else the text."""
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return value if isinstance(value, int | float | bool) else raw


def build_entry(config: GatewayConfig, registry: Registry, *, agent: str, capability: str,
                settings: Mapping[str, Any], approval: str = "default") -> Built:
    """The agent's spec with this capability's entry set to `settings` (replacing its entry, or added), judged by
    `gateway check`'s rules over the whole config, so every refusal reads as `check` would say it."""
    entry: dict[str, Any] = {"id": capability, **({"config": dict(settings)} if settings else {}),
                             **({"approval": approval} if approval != "default" else {})}
    data = config.model_dump(mode="json", exclude_unset=True)
    index = next(i for i, spec in enumerate(data["agents"]) if spec["name"] == agent)
    entries = [existing for existing in data["agents"][index].get("capabilities", [])
               if existing.get("id") != capability]
    data["agents"][index]["capabilities"] = [*entries, entry]
    fragment = yaml.safe_dump({"agents": [{"name": agent, "capabilities": [entry]}]}, sort_keys=False,
                              allow_unicode=True)
    try:
        changed = GatewayConfig.model_validate(data)
    except Exception as exc:  # a schema error of the spec itself (an approval mode that does not exist, say)
        return Built(entry=entry, fragment=fragment, problems=[str(exc)])
    problems = reference_problems(changed) + [parse_problem(p) for p in apply_problems(changed, registry)]
    source = ConfigSource(data=changed.model_dump(mode="json"))
    return Built(entry=entry, fragment=fragment, problems=source.lines(problems),
                 config=None if problems else changed)
