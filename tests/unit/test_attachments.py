"""How a message's attachments become the turn's prompt: text framed and capped, binaries where the model takes
them, and every file not read named with its reason (never dropped)."""

from __future__ import annotations

from pydantic_ai import BinaryContent
from pydantic_ai.models.function import FunctionModel
from pydantic_ai.profiles import ModelProfile

from adapters.base import FileRef, FileUnreadable
from gateway.pipeline.attachments import MAX_FILES, TEXT_LIMIT, Attachment, fetch_attachments, user_content
from tests.support.scripted import answers


class Shelf:
    """A platform's files by id (a `ReadsFiles`); ids it does not hold are refused as the platform would."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    async def fetch_file(self, file: FileRef, *, max_bytes: int) -> bytes:
        if file.file_id not in self.files:
            raise FileUnreadable(f"{file.name}: the bot may not read it")
        return self.files[file.file_id]


async def test_files_past_the_per_message_limit_are_named_not_read() -> None:
    refs = [FileRef(file_id=str(i), name=f"f{i}.csv", mime_type="text/csv") for i in range(MAX_FILES + 1)]
    fetched = await fetch_attachments(Shelf({str(i): b"a,b\n" for i in range(MAX_FILES + 1)}), refs)
    assert [a.problem for a in fetched[:MAX_FILES]] == [None] * MAX_FILES
    assert fetched[-1].problem == f"only the first {MAX_FILES} files of a message are read"


async def test_a_refused_file_becomes_a_line_telling_the_model_to_say_so() -> None:
    [fetched] = await fetch_attachments(Shelf({}), [FileRef(file_id="x", name="hr.pdf", mime_type="application/pdf")])
    prompt = user_content("read this", [fetched], answers("ok"))
    assert prompt == ["read this", "[The person attached hr.pdf, which you cannot see: hr.pdf: the bot may not read "
                                   "it. Tell them so in your answer, and what they can do about it.]"]


def test_a_long_text_file_is_cut_and_the_model_told() -> None:
    big = Attachment(name="log.txt", mime_type="text/plain", data=b"Q" * (TEXT_LIMIT + 10))
    [_, text] = user_content("summarize", [big], answers("ok"))
    assert isinstance(text, str) and f"Only the first {TEXT_LIMIT:,}" in text
    assert text.count("Q") == TEXT_LIMIT


def test_a_pdf_goes_as_text_note_to_a_model_that_reads_no_documents() -> None:
    pdf = Attachment(name="r.pdf", mime_type="application/pdf", data=b"%PDF-1.4")
    reader = user_content("read", [pdf], answers("ok"))
    blind = user_content("read", [pdf], FunctionModel(lambda _m, _i: None,  # type: ignore[arg-type, return-value]
                                                      profile=ModelProfile(supports_document_input=False)))
    assert isinstance(reader[1], BinaryContent)
    assert "cannot read PDF files" in str(blind[1])


def test_a_message_without_files_keeps_its_plain_prompt() -> None:
    assert user_content("hi", [], answers("ok")) == "hi"


class Failing:
    """A platform whose downloads fail with `error`."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def fetch_file(self, file: FileRef, *, max_bytes: int) -> bytes:
        raise self.error


async def test_a_failure_that_is_not_an_outage_is_named_and_not_called_worth_sending_again() -> None:
    [fetched] = await fetch_attachments(Failing(ValueError("unexpected body")), [FileRef(file_id="x", name="a.json")])
    assert fetched.problem is not None and "ValueError" in fetched.problem and "operator" in fetched.problem
    assert "sending it again" not in fetched.problem


async def test_a_download_that_got_no_answer_is_called_worth_sending_again() -> None:
    [fetched] = await fetch_attachments(Failing(ConnectionResetError()), [FileRef(file_id="x", name="a.json")])
    assert fetched.problem == "the platform did not answer the download just now (sending it again may work)"
