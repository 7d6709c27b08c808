"""Message content as the Bot API checks it: text in the HTML parse mode, automatic entities, keyboards.

Offsets and lengths of entities are counted in UTF-16 code units, as Telegram counts them
(https://core.telegram.org/api/entities#entity-length). Error texts follow the Bot API server
(tdlib ``parse_html``), which answers them after ``Bad Request: can't parse entities:``.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

from local_platforms.server import is_json_array, is_json_object

__all__ = [
    "MAX_CALLBACK_DATA_BYTES",
    "MAX_TEXT_LENGTH",
    "EntityParseError",
    "RejectedContent",
    "detect_entities",
    "inline_keyboard",
    "message_text",
    "parse_html",
    "utf16_len",
]

MAX_TEXT_LENGTH = 4096
"""Longest message text, in characters after entity parsing."""
MAX_CALLBACK_DATA_BYTES = 64

_ENTITY_TYPES = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "code": "code",
    "pre": "pre",
    "a": "text_link",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_NAMED_CHARACTERS = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_CHARACTER_REFERENCE = re.compile(r"&(?:#(\d{1,8})|#[xX]([0-9a-fA-F]{1,6})|([a-zA-Z]{2,8}));")
_TAG_NAME = re.compile(r"[^\s>]*")
_ATTRIBUTE = re.compile(r"\s*([A-Za-z][\w-]*)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s>\"']+))?")
_END_TAG = re.compile(r"</([^\s>]*)\s*(>?)")
_SPECIAL = re.compile(r"[<&]")
_AUTOMATIC = re.compile(
    r"(?P<url>\bhttps?://[^\s<>\"]+[^\s<>\".,;:!?)\]'])"
    r"|(?<![\w/@])(?P<bot_command>/[A-Za-z0-9_]{1,64}(?:@[A-Za-z0-9_]{3,32})?)(?![\w/@])"
    r"|(?<![\w@])(?P<mention>@[A-Za-z0-9_]{3,32})(?![\w@])"
)


class RejectedContent(ValueError):
    """Content the Bot API answers with 400; ``str(error)`` is the whole description."""


class EntityParseError(ValueError):
    """Markup the Bot API refuses; ``str(error)`` is the text after "can't parse entities: "."""


def utf16_len(text: str) -> int:
    """Length of ``text`` in UTF-16 code units, the unit of Telegram entity offsets."""
    return len(text.encode("utf-16-le")) // 2


@dataclass(slots=True)
class _Entity:
    type: str
    offset: int
    length: int = 0
    extra: dict[str, Any] = field(default_factory=dict[str, Any])
    language: str | None = None
    """A ``<code class="language-x">``: only a surrounding ``pre`` entity carries it on the wire."""

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "offset": self.offset, "length": self.length, **self.extra}


@dataclass(slots=True)
class _OpenTag:
    name: str
    entity: _Entity


@dataclass(slots=True)
class _HtmlParser:
    """One pass over HTML markup, tracking the visible text and the open tags."""

    markup: str
    parts: list[str] = field(default_factory=list[str])
    offset: int = 0
    open_tags: list[_OpenTag] = field(default_factory=list[_OpenTag])
    entities: list[_Entity] = field(default_factory=list[_Entity])

    def run(self) -> tuple[str, list[dict[str, Any]]]:
        position = 0
        while (match := _SPECIAL.search(self.markup, position)) is not None:
            self.append(self.markup[position : match.start()])
            if match.group() == "&":
                position = self.character_reference(match.start())
            elif self.markup.startswith("</", match.start()):
                position = self.end_tag(match.start())
            else:
                position = self.start_tag(match.start())
        self.append(self.markup[position:])
        if self.open_tags:
            raise EntityParseError(f'Can\'t find end tag corresponding to start tag "{self.open_tags[-1].name}"')
        entities = [entity for entity in self.entities if entity.length > 0]
        entities.sort(key=lambda entity: (entity.offset, -entity.length))
        return "".join(self.parts), [entity.to_json() for entity in entities]

    def append(self, text: str) -> None:
        self.parts.append(text)
        self.offset += utf16_len(text)

    def byte_offset(self, position: int) -> int:
        return len(self.markup[:position].encode())

    def character_reference(self, position: int) -> int:
        match = _CHARACTER_REFERENCE.match(self.markup, position)
        character = _decode_reference(match) if match else None
        if match is None or character is None:
            raise EntityParseError(
                f'Character "&" at byte offset {self.byte_offset(position)} must be escaped as "&amp;"'
            )
        self.append(character)
        return match.end()

    def start_tag(self, position: int) -> int:
        name_match = _TAG_NAME.match(self.markup, position + 1)
        assert name_match is not None  # the pattern matches the empty string
        name = name_match.group().lower()
        if name_match.end() >= len(self.markup):
            raise EntityParseError(f"Unclosed start tag at byte offset {self.byte_offset(position)}")
        if name not in _ENTITY_TYPES:
            raise EntityParseError(f'Unsupported start tag "{name}" at byte offset {self.byte_offset(position)}')
        attributes, end = self.attributes(name, position, name_match.end())
        self.open_tags.append(self.open_tag(name, attributes, position))
        return end

    def attributes(self, name: str, position: int, cursor: int) -> tuple[dict[str, str], int]:
        attributes: dict[str, str] = {}
        while True:
            while cursor < len(self.markup) and self.markup[cursor].isspace():
                cursor += 1
            if cursor >= len(self.markup):
                raise EntityParseError(f"Unclosed start tag at byte offset {self.byte_offset(position)}")
            if self.markup[cursor] == ">":
                return attributes, cursor + 1
            match = _ATTRIBUTE.match(self.markup, cursor)
            if match is None:
                raise EntityParseError(
                    f'Expected equal sign in declaration of an attribute of the tag "{name}" '
                    f"at byte offset {self.byte_offset(position)}"
                )
            attributes[match.group(1).lower()] = _decode_attribute(match.group(2) or "")
            cursor = match.end()

    def open_tag(self, name: str, attributes: dict[str, str], position: int) -> _OpenTag:
        entity = _Entity(_ENTITY_TYPES[name], self.offset)
        if name == "span" and attributes.get("class") != "tg-spoiler":
            raise EntityParseError(
                f'Tag "span" must have class "tg-spoiler" at byte offset {self.byte_offset(position)}'
            )
        if name == "a":
            entity.extra["url"] = attributes.get("href", "")
        elif name == "tg-emoji":
            entity.extra["custom_emoji_id"] = attributes.get("emoji-id", "")
        elif name == "blockquote" and "expandable" in attributes:
            entity.type = "expandable_blockquote"
        elif name == "code" and attributes.get("class", "").startswith("language-"):
            entity.language = attributes["class"].removeprefix("language-")
        return _OpenTag(name, entity)

    def end_tag(self, position: int) -> int:
        match = _END_TAG.match(self.markup, position)
        assert match is not None  # the pattern matches any "</"
        if not self.open_tags:
            raise EntityParseError(f"Unexpected end tag at byte offset {self.byte_offset(position)}")
        if not match.group(2):
            raise EntityParseError(f"Unclosed end tag at byte offset {self.byte_offset(position)}")
        expected, found = self.open_tags[-1].name, match.group(1).lower()
        if found and found != expected:
            raise EntityParseError(
                f"Unmatched end tag at byte offset {self.byte_offset(position)}, "
                f'expected "</{expected}>", found "</{found}>"'
            )
        self.close(self.open_tags.pop())
        return match.end()

    def close(self, tag: _OpenTag) -> None:
        tag.entity.length = self.offset - tag.entity.offset
        if tag.name == "a" and not tag.entity.extra["url"]:
            return
        if tag.name == "pre":
            self.merge_code_into_pre(tag.entity)
        self.entities.append(tag.entity)

    def merge_code_into_pre(self, pre: _Entity) -> None:
        """``<pre><code class="language-x">…</code></pre>`` is one ``pre`` entity with a language."""
        if not self.entities:
            return
        inner = self.entities[-1]
        if inner.type == "code" and (inner.offset, inner.length) == (pre.offset, pre.length):
            self.entities.pop()
            if inner.language:
                pre.extra["language"] = inner.language


def _decode_reference(match: re.Match[str]) -> str | None:
    decimal, hexadecimal, name = match.groups()
    if name is not None:
        return _NAMED_CHARACTERS.get(name)
    code_point = int(decimal) if decimal is not None else int(hexadecimal, 16)
    if code_point == 0 or code_point > 0x10FFFF or 0xD800 <= code_point <= 0xDFFF:
        return None
    return chr(code_point)


def _decode_attribute(raw: str) -> str:
    value = raw[1:-1] if raw[:1] in {'"', "'"} else raw
    return _CHARACTER_REFERENCE.sub(lambda match: _decode_reference(match) or match.group(), value)


def parse_html(markup: str) -> tuple[str, list[dict[str, Any]]]:
    """Parse Telegram's HTML subset into the visible text and its MessageEntity JSON list.

    Raises:
        EntityParseError: an unsupported, unclosed or mismatched tag, or a ``<`` / ``&`` that
            starts neither a tag nor one of ``&lt; &gt; &amp; &quot;`` or a numeric reference.
            Telegram itself keeps an unknown ``&`` literally; the local server is stricter than
            Telegram here because the Bot API documentation requires escaping it.
    """
    return _HtmlParser(markup).run()


def detect_entities(text: str) -> list[dict[str, Any]]:
    """The entities Telegram adds to a user's plain text: ``mention``, ``bot_command``, ``url``."""
    entities: list[dict[str, Any]] = []
    for match in _AUTOMATIC.finditer(text):
        kind = match.lastgroup
        assert kind is not None  # every alternative is a named group
        entities.append(
            {
                "type": kind,
                "offset": utf16_len(text[: match.start()]),
                "length": utf16_len(match.group()),
            }
        )
    return entities


def message_text(text: Any, parse_mode: Any, entities: Any) -> tuple[str, list[dict[str, Any]]]:
    """The visible text and entities of a sendMessage / editMessageText request.

    Raises:
        RejectedContent: empty or too long text, markup that does not parse, an unknown parse mode.
            Markdown and MarkdownV2 are refused too: only HTML is implemented.
    """
    raw, mode = str(text or ""), str(parse_mode or "").lower()
    if not raw.strip():
        raise RejectedContent("Bad Request: message text is empty")
    if mode == "html":
        try:
            visible, parsed = parse_html(raw)
        except EntityParseError as error:
            raise RejectedContent(f"Bad Request: can't parse entities: {error}") from None
    elif mode in {"markdown", "markdownv2"}:
        raise RejectedContent("Bad Request: can't parse entities: the local server implements parse_mode HTML only")
    elif mode:
        raise RejectedContent("Bad Request: unsupported parse_mode")
    else:
        visible, parsed = raw, list(entities) if is_json_array(entities) else []
    if not visible.strip():
        raise RejectedContent("Bad Request: message text is empty")
    if len(visible) > MAX_TEXT_LENGTH:
        raise RejectedContent("Bad Request: message is too long")
    return visible, parsed


def inline_keyboard(markup: Any) -> dict[str, Any] | None:
    """The inline keyboard a message keeps from ``reply_markup``; other keyboards are not kept.

    Raises:
        RejectedContent: malformed rows, a button without an action, callback data outside 1-64 bytes.
    """
    if not is_json_object(markup) or "inline_keyboard" not in markup:
        return None
    rows = markup["inline_keyboard"]
    if not is_json_array(rows) or not all(is_json_array(row) for row in rows):
        raise RejectedContent('Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup must be an Array')
    for button in itertools.chain.from_iterable(rows):
        if not is_json_object(button) or not button.get("text"):
            raise RejectedContent("Bad Request: can't parse inline keyboard button: Text is missing")
        if len(button) == 1:
            raise RejectedContent("Bad Request: text buttons are unallowed in the inline keyboard")
        data = button.get("callback_data")
        if data is not None and not 1 <= len(str(data).encode()) <= MAX_CALLBACK_DATA_BYTES:
            raise RejectedContent("Bad Request: BUTTON_DATA_INVALID")
    return markup
