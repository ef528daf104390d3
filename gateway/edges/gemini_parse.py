"""Gemini ``generateContent`` request body -> :class:`gateway.schema.Request`.

Reference: https://ai.google.dev/api/generate-content#request-body (``Content``, ``Part``,
``Tool``, ``ToolConfig``, ``GenerationConfig``, ``SafetySetting``). The model and whether the
answer streams come from the URL (``models/{model}:generateContent`` /
``:streamGenerateContent``), not the body. Field names are the REST API's camelCase ones (what
the google-genai SDKs and Gemini CLI send); any other key is refused naming it.

**Every field is carried, translated or refused by name** (HTTP 400 ``INVALID_ARGUMENT``):

* translated into the schema: ``contents`` (``text``, ``thought`` text, ``inlineData`` and
  ``fileData`` images (documents and audio too in a user turn), ``functionCall``,
  ``functionResponse`` with image ``parts``),
  ``systemInstruction``, ``tools[].functionDeclarations`` (``parameters`` in Gemini's
  ``Schema`` -> JSON Schema: :func:`json_schema_from_gemini`; ``parametersJsonSchema`` as is),
  ``toolConfig.functionCallingConfig``, ``generationConfig`` ``temperature`` / ``topP`` /
  ``topK`` / ``maxOutputTokens`` / ``stopSequences`` / ``candidateCount`` 1 /
  ``responseMimeType`` / ``responseSchema`` / ``responseJsonSchema`` / ``thinkingConfig`` /
  ``seed`` / ``presencePenalty`` / ``frequencyPenalty`` (which targets get the last three:
  :mod:`gateway.layers.target_fields`);
* carried to a Gemini upstream only (:class:`gateway.schema.NativeFields`; toward any other
  upstream the target layer refuses them by name): ``safetySettings``, ``labels``,
  ``modelArmorConfig``, built-in tools (``googleSearch``, ``urlContext``, ``googleMaps``, ...),
  ``toolConfig`` keys other than ``functionCallingConfig`` and the other ``generationConfig``
  keys (``mediaResolution``, ...); the search tools' grounding
  metadata (``groundingMetadata``) is not relayed back yet, their answer text is;
* carried to a Gemini upstream, dropped and named toward another (serving only):
  ``serviceTier``;
* refused: ``cachedContent`` (a cache lives in one upstream project), ``candidateCount`` > 1,
  output the gateway does not relay (``responseLogprobs``/``logprobs``, ``speechConfig``,
  ``imageConfig``, ``responseModalities`` other than text; the built-in tools ``codeExecution``,
  ``computerUse``, ``fileSearch``, ``retrieval``, ``mcpServers``, whose results are parts),
  ``inlineData`` / ``fileData`` other than images, documents and audio in a user turn,
  ``executableCode`` / ``codeExecutionResult`` / ``toolCall`` / ``toolResponse`` /
  ``videoMetadata`` / ``partMetadata`` / ``mediaResolution`` parts, a ``functionCall`` streamed
  in pieces (``partialArgs``, ``willContinue``), ``functionResponse.scheduling``,
  ``functionCallingConfig.streamFunctionCallArguments: true``,
  ``functionDeclarations[].response`` schemas and ``behavior``,
  ``allowedFunctionNames`` naming some but not all of several functions under mode ``ANY``.

**Same wire, as sent.** A Gemini upstream gets the client's own form of the fields the schema
translates (:meth:`gateway.edges.gemini_options.Native.verbatim`; nothing is refused toward
another wire API, which gets the translation below): ``thinkingConfig``, ``responseSchema``
(with its ``propertyOrdering``) or ``responseJsonSchema`` (JSON Schema, in that slot),
``functionCallingConfig.mode: VALIDATED``, a ``functionResponse.response`` object other than
``{"output": text}`` / ``{"error": text}`` (on the tool result's ``own``: ``{"response": {...}}``),
and ``thought`` parts without a signature in model turns (provenance :data:`NATIVE`: kept for
a Gemini upstream, the foreign-thinking policy elsewhere).

``thinkingConfig`` toward the other APIs: ``thinkingBudget`` 0 turns thinking off, -1 is
dynamic, N a budget; ``thinkingLevel`` is an effort; ``includeThoughts`` asks for thinking and
for its thought summaries in the answer: without ``includeThoughts: true`` (Gemini's default is
false) the answer carries no thought text, only the thought signatures the client must send
back (:class:`GeminiRequest`; https://ai.google.dev/gemini-api/docs/thinking#summaries).
``toolConfig`` mode ``VALIDATED`` is ``auto`` with strict tool schemas toward the other APIs
(constrained calls are what strict means there). A ``functionResponse.response`` object is its
JSON text there.

**Pairing of ``functionResponse`` with ``functionCall``.** A ``functionResponse`` answers

1. the ``functionCall`` with the same ``id``, when it has an ``id`` that a call of the request
   has; otherwise
2. by name and order: within one user turn, the n-th such ``functionResponse`` of name X
   answers the n-th ``functionCall`` of name X of the preceding model turn (the model contents
   right before it) that no response answered by id.

A call without an ``id`` gets a deterministic internal id (:func:`call_id`: its content and
part index and name), so the same history always gives the same ids, and the gateway's
pairing and ordering guards then apply as for every dialect: a response that answers no call
is refused (HTTP 400 naming ``contents[i].parts[j].functionResponse``), a call left without a
response is handled by the pairing policy. Answers always carry ``functionCall.id`` (the
upstream's or the gateway's), so clients echo it and rule 1 applies on the next turn.

**Thought signatures.** A ``thoughtSignature`` the gateway rendered is base64 of its provenance
envelope (:func:`gateway.edges.signatures.unwrap_b64_signature`); any other is a raw Gemini
signature with provenance :data:`NATIVE`. On a ``thought`` part it is the thinking part's
signature (``redacted:`` envelopes become redacted thinking; consecutive thought parts are one
thinking part, which a signed one ends: a streamed thought as a client keeps it), on a
``functionCall`` the tool
call's, and on a plain text part it becomes an empty signed thinking part right after the text
(the convention of :mod:`gateway.providers.gemini_stream`, which the Gemini request builder
undoes).

How it works, as in the other edges: one pass checks every field by hand (errors name the
field, :mod:`gateway.edges._common`) and assembles plain dicts in the shape of
:mod:`gateway.schema`, validated once (:func:`gateway.edges._common.validate_request`).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

import orjson
from pydantic import Field

from gateway.edges._bounds import DEFAULT_LIMITS, FieldPattern, InputLimits, check_contents_bounds
from gateway.edges._common import (
    JSONObj,
    as_obj,
    check,
    join,
    load_body,
    mcp_server_entries,
    opt,
    req,
    unsupported,
    validate_request,
)
from gateway.edges.call_ids import BadIds, plain_call_id, refusal
from gateway.edges.gemini_options import (
    Native,
    camel,
    generation,
    obj,
    tool_choice,
    tools,
)
from gateway.edges.signatures import unwrap_b64_signature
from gateway.errors import InvalidRequest
from gateway.providers.gemini_common import API, model_path
from gateway.schema import Provenance, Request

NATIVE = Provenance(api=API, provider="google", model="")
"""Provenance of a raw ``thoughtSignature`` sent by a Gemini client (any Gemini model)."""

_FIELD_NAMES = {
    "max_output_tokens": "generationConfig.maxOutputTokens",
    "temperature": "generationConfig.temperature",
    "top_p": "generationConfig.topP",
    "top_k": "generationConfig.topK",
    "stop": "generationConfig.stopSequences",
    "response_format": "generationConfig.responseSchema",
    "thinking": "generationConfig.thinkingConfig",
    "tool_choice": "toolConfig",
}
"""Internal top-level field -> the client's field, for the (unexpected) validation error."""

_FREE_FORM: tuple[FieldPattern, ...] = (
    ("contents", "*", "parts", "*", "functionCall", "args"),
    ("contents", "*", "parts", "*", "functionResponse", "response"),
    ("tools", "*", "functionDeclarations", "*", "parameters"),
    ("tools", "*", "functionDeclarations", "*", "parametersJsonSchema"),
    ("generationConfig", "responseSchema"),
    ("generationConfig", "responseJsonSchema"),
    ("safetySettings",),
    ("labels",),
)
"""Where a request carries JSON of the client's own shape (named when it nests too deep)."""

_TOP_LEVEL = frozenset(
    {
        "contents",
        "systemInstruction",
        "tools",
        "toolConfig",
        "generationConfig",
        "safetySettings",
        "cachedContent",
        "labels",
        "modelArmorConfig",
        "serviceTier",
        "model",
    }
)
PASSED = ("safetySettings", "labels", "modelArmorConfig")
"""Top-level fields carried verbatim to a Gemini upstream and refused toward another wire API
(``NativeFields.paths``): safety filters and Model Armor screening change the answer; labels
are Vertex AI's billing labels, kept with them as they always were."""
SERVING = ("serviceTier",)
"""Top-level fields carried verbatim to a Gemini upstream and dropped and named toward another
wire API (``NativeFields.serving``): the processing tier steers serving, not the answer."""
PART_KEYS = frozenset(
    {"text", "thought", "thoughtSignature", "inlineData", "fileData", "functionCall", "functionResponse"}
)
REFUSED_PARTS = (
    "executableCode",
    "codeExecutionResult",
    "videoMetadata",
    "partMetadata",
    "mediaResolution",
    "toolCall",
    "toolResponse",
)
"""Keys of a ``Part`` read (:data:`PART_KEYS`) and refused by name: code execution and
server-side tool calls and results (the gateway does not relay them), video offsets, part
metadata, per-part media resolution (Gemini 3 only; no other API has it)."""
CONTENT_KEYS = frozenset({"role", "parts"})
MEDIA_KEYS = frozenset({"mimeType", "data", "fileUri", "displayName"})
"""Keys of a ``Content`` and of ``inlineData`` / ``fileData`` (``Blob``, ``FileData``)."""
FUNCTION_CALL_KEYS = frozenset({"id", "name", "args"})
FUNCTION_CALL_REFUSED = ("partialArgs", "willContinue")
"""Keys of a ``functionCall`` read, and refused when they ask for something (a call streamed
in pieces: the gateway hands calls over whole)."""
FUNCTION_RESPONSE_KEYS = frozenset({"id", "name", "response", "parts", "willContinue"})
FUNCTION_RESPONSE_REFUSED = ("scheduling",)
"""Keys of a ``functionResponse`` read (``willContinue: true`` refused) and refused by name
(``scheduling`` of a response in a live session)."""


def call_id(content: int, part: int, name: str) -> str:
    """The internal id of a ``functionCall`` sent without one: ``"call_"`` + the first 24 hex
    of sha256 over its content index, part index and name (deterministic: the same history
    gives the same ids on every turn)."""
    digest = hashlib.sha256(f"gemini\x00{content}\x00{part}\x00{name}".encode()).hexdigest()
    return "call_" + digest[:24]


# ---------------------------------------------------------------------------- parse state


class _State(BadIds):
    """Per-request parse state: the ids every ``functionCall`` of the request was sent with,
    the calls of the latest model turn (``(name, internal id, given id)`` in order), and the
    tool-call ids no upstream accepts (:mod:`gateway.edges.call_ids`)."""

    __slots__ = ("given", "last_calls", "last_index", "responses")

    def __init__(self, given: set[str]) -> None:
        super().__init__()
        self.given = given
        self.last_calls: list[tuple[str, str]] = []
        self.last_index = -2


def _given_ids(contents: list[Any]) -> set[str]:
    """The ``functionCall.id`` values of the request (a first pass: a response may be matched
    by id to any call, the guards then judge its place)."""
    out: set[str] = set()
    for content in contents:
        if type(content) is not dict:
            continue
        for part in content.get("parts") or ():
            if type(part) is dict:
                fc = part.get("functionCall") or part.get("function_call")
                if type(fc) is dict and type(fc.get("id")) is str and fc["id"]:
                    out.add(fc["id"])
    return out


def _signature(part: JSONObj, path: str) -> tuple[str, Provenance, bool] | None:
    """A part's ``thoughtSignature`` unwrapped: ``(signature, provenance, redacted)``, or None."""
    value = opt(part, "thoughtSignature", str, path)
    if not value:
        return None
    try:
        sig, prov, redacted = unwrap_b64_signature(value)
    except ValueError as exc:
        spath = join(path, "thoughtSignature")
        raise InvalidRequest(f"{spath}: damaged Turnstile signature envelope ({exc})", param=spath) from None
    return sig, prov or NATIVE, redacted


_DATA_KEYS = ("text", "inlineData", "fileData", "functionCall", "functionResponse")


def _check_keys(part: JSONObj, path: str) -> None:
    """Refuse an empty part, a part with a field this edge does not know (naming it), or with
    more than one kind of data (``text`` and ``functionCall`` together: Gemini's ``Part`` is a
    oneof)."""
    if not part:
        raise InvalidRequest(
            f"{path}: an empty part; a part holds one of {', '.join(_DATA_KEYS)}", param=path
        )
    data = 0
    for key in part:
        if key not in PART_KEYS:
            kpath = join(path, key)
            if key in REFUSED_PARTS:
                raise unsupported(kpath, f"the part field {key!r}")
            raise InvalidRequest(f"{kpath}: unknown part field {key!r}", param=kpath)
        if key in _DATA_KEYS:
            data += 1
    if data > 1:
        kinds = ", ".join(k for k in _DATA_KEYS if k in part)
        raise InvalidRequest(f"{path}: a part holds one kind of data, this one has {kinds}", param=path)


_URL_SAFE = str.maketrans("-_", "+/")


def _standard_base64(data: str, path: str) -> str:
    """``inlineData.data`` (Gemini's ``bytes`` in JSON: standard or URL-safe base64, padded or
    not, as the proto3 JSON mapping reads it, https://protobuf.dev/programming-guides/json/;
    google-genai sends it URL-safe) -> the same bytes in standard, padded base64. Raises
    :class:`InvalidRequest` naming ``path`` for anything else."""
    text = data.translate(_URL_SAFE)
    text += "=" * (-len(text) % 4)
    try:
        base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as err:
        raise InvalidRequest(f"{path}: not valid base64 ({err})", param=path) from None
    return text


def _media(part: JSONObj, key: str, path: str, user: bool = False) -> JSONObj:
    """An ``inlineData`` / ``fileData`` part -> an image part dict; in a user turn (``user``)
    also a document (``application/*``, ``text/*``) or audio (``audio/*``) part dict, with
    ``src`` = ``path``. Other types (video) are refused by name.
    Source: https://ai.google.dev/gemini-api/docs/document-processing"""
    mpath = join(path, key)
    media = obj(part[key], mpath)
    mime = req(media, "mimeType", str, mpath)
    kind = "image"
    if not mime.startswith("image/"):
        if user and mime.startswith(("application/", "text/")):
            kind = "document"
        elif user and mime.startswith("audio/"):
            kind = "audio"
        else:
            allowed = "image/*, application/*, text/* or audio/*" if user else "image/*"
            raise unsupported(join(mpath, "mimeType"), f"{key} of type {mime!r} (only {allowed} is)")
    for k in media:
        if k not in MEDIA_KEYS:
            raise InvalidRequest(f"{join(mpath, k)}: unknown field {k!r}", param=join(mpath, k))
    if key == "inlineData":
        out: JSONObj = {
            "type": kind,
            "data": _standard_base64(req(media, "data", str, mpath), join(mpath, "data")),
            "media_type": mime,
        }
    else:
        out = {"type": kind, "url": req(media, "fileUri", str, mpath), "media_type": mime}
    if kind != "image":
        out["src"] = path
        name = opt(media, "displayName", str, mpath)
        if kind == "document":
            out["filename"] = name
        elif name is not None:
            raise unsupported(join(mpath, "displayName"), "a displayName on audio")
    elif "displayName" in media:
        raise unsupported(join(mpath, "displayName"), "a displayName on an image")
    return out


def _model_part(part: JSONObj, i: int, j: int, path: str, st: _State, out: list[JSONObj]) -> None:
    """One part of a model turn -> its part dicts appended to ``out``."""
    _check_keys(part, path)
    signed = _signature(part, path)
    fc = part.get("functionCall")
    if fc is not None:
        fpath = join(path, "functionCall")
        fc = obj(fc, fpath)
        for k in fc:
            if k not in FUNCTION_CALL_KEYS:
                kpath = join(fpath, k)
                if k in FUNCTION_CALL_REFUSED:
                    if fc[k] in (None, False):
                        continue
                    raise unsupported(kpath, f"a functionCall streamed in pieces ({k})")
                raise InvalidRequest(f"{kpath}: unknown field {k!r}", param=kpath)
        name = req(fc, "name", str, fpath)
        args = as_obj(fc.get("args") or {}, join(fpath, "args"))
        given = opt(fc, "id", str, fpath)
        cid = given or call_id(i, j, name)
        if given and plain_call_id(given) is None:
            st.check_id(given, join(fpath, "id"))
        st.last_calls.append((name, cid))
        out.append(
            {
                "type": "tool_call",
                "id": cid,
                "name": name,
                "arguments": args,
                "raw_arguments": orjson.dumps(args).decode(),
                "signature": signed[0] if signed else None,
                "provenance": signed[1] if signed else None,
                "src": fpath,
            }
        )
        return
    if "inlineData" in part or "fileData" in part or "functionResponse" in part:
        key = next(k for k in ("inlineData", "fileData", "functionResponse") if k in part)
        raise unsupported(join(path, key), f"{key} in a model turn")
    text = opt(part, "text", str, path) or ""
    thought = opt(part, "thought", bool, path)
    if thought:
        if signed and signed[2]:
            out.append({"type": "redacted_thinking", "data": signed[0], "provenance": signed[1]})
            return
        last = out[-1] if out else None
        if last is not None and last["type"] == "thinking" and "signature" not in last:
            # the thought parts of a stream, as a client kept them: one thinking part, closed
            # by the signature that ends it (as gateway.providers.gemini_stream reads them)
            last["text"] += text
            if signed:
                last["signature"], last["provenance"] = signed[0], signed[1]
        elif signed:
            out.append({"type": "thinking", "text": text, "signature": signed[0], "provenance": signed[1]})
        elif text:  # unsigned thought text: a Gemini upstream gets it back, others per policy
            out.append({"type": "thinking", "text": text, "provenance": NATIVE})
        return
    if text:
        out.append({"type": "text", "text": text})
    if signed:  # a signature on plain text: an empty signed thinking part right after it
        out.append({"type": "thinking", "text": "", "signature": signed[0], "provenance": signed[1]})


def _response_content(response: JSONObj) -> tuple[str, bool]:
    """``functionResponse.response`` -> ``(text, is_error)``: ``{"output": s}`` -> ``s``,
    ``{"error": s}`` -> ``(s, True)`` (the keys Google documents), anything else its JSON."""
    if len(response) == 1:
        key, value = next(iter(response.items()))
        if key in ("output", "error"):
            text = value if type(value) is str else orjson.dumps(value).decode()
            return text, key == "error"
    return orjson.dumps(response).decode(), False


def _user_turn(content: JSONObj, i: int, path: str, st: _State, out: list[JSONObj]) -> None:
    """A user turn -> its tool results (paired: module docstring), then one user message with
    its other parts."""
    parts = req(content, "parts", list, path)
    ppath = join(path, "parts")
    media: list[JSONObj] = []
    responses: list[tuple[str, JSONObj]] = []  # (path, functionResponse)
    for j, raw in enumerate(parts):
        bpath = join(ppath, j)
        part = obj(raw, bpath)
        _check_keys(part, bpath)
        if "functionResponse" in part:
            responses.append((join(bpath, "functionResponse"), obj(part["functionResponse"], bpath)))
        elif "inlineData" in part or "fileData" in part:
            media.append(_media(part, "inlineData" if "inlineData" in part else "fileData", bpath, True))
        elif "functionCall" in part:
            raise unsupported(join(bpath, "functionCall"), "functionCall in a user turn")
        else:
            if opt(part, "thought", bool, bpath):
                raise unsupported(join(bpath, "thought"), "thought parts in a user turn")
            if part.get("thoughtSignature") is not None:
                raise unsupported(join(bpath, "thoughtSignature"), "thoughtSignature in a user turn")
            text = opt(part, "text", str, bpath)
            if text:
                media.append({"type": "text", "text": text})
    if responses:
        out.extend(_results(responses, i, st))
    if media or not responses:
        out.append({"role": "user", "content": media, "src": path})


def _results(responses: list[tuple[str, JSONObj]], i: int, st: _State) -> list[JSONObj]:
    """Tool-result message dicts for one user turn's ``functionResponse`` parts (module
    docstring: by id, then by name and order among the preceding model turn's calls)."""
    open_calls = list(st.last_calls) if st.last_index == i - 1 else []
    ids: list[str | None] = []
    for path, fr in responses:
        given = opt(fr, "id", str, path)
        if given and given in st.given:
            ids.append(given)
            open_calls = [c for c in open_calls if c[1] != given]
        else:
            ids.append(None)
    out: list[JSONObj] = []
    for (path, fr), cid in zip(responses, ids, strict=True):
        for k in fr:
            if k not in FUNCTION_RESPONSE_KEYS:
                if k in FUNCTION_RESPONSE_REFUSED:
                    if fr[k] is None:
                        continue  # null asks for nothing
                    raise unsupported(join(path, k), f"the functionResponse field {k!r}")
                raise InvalidRequest(f"{join(path, k)}: unknown field {k!r}", param=join(path, k))
        name = req(fr, "name", str, path)
        if cid is None:
            match = next((n for n, c in enumerate(open_calls) if c[0] == name), None)
            given = opt(fr, "id", str, path)
            if match is None:
                said = f" with id {given!r}" if given else ""
                raise InvalidRequest(
                    f"{path}: functionResponse {name!r}{said} answers no functionCall: no call has that "
                    f"id, and no unanswered functionCall named {name!r} is in the preceding model turn",
                    param=path,
                )
            cid = open_calls.pop(match)[1]
        if plain_call_id(cid) is None:
            st.check_id(cid, join(path, "id"))
        if fr.get("willContinue"):
            raise unsupported(join(path, "willContinue"), "a functionResponse that continues (willContinue)")
        response = as_obj(req(fr, "response", dict, path), join(path, "response"))
        text, is_error = _response_content(response)
        own = None
        if response != {"error" if is_error else "output": text}:
            own = {"api": API, "keys": {"response": response}}  # a Gemini upstream gets it, not the text
        content: list[JSONObj] = [{"type": "text", "text": text}] if text else []
        for n, raw_part in enumerate(opt(fr, "parts", list, path) or ()):
            rpath = join(join(path, "parts"), n)
            part = obj(raw_part, rpath)
            key = "inlineData" if "inlineData" in part else "fileData" if "fileData" in part else None
            if key is None or len(part) != 1:
                raise unsupported(rpath, "a functionResponse part other than inlineData or fileData")
            content.append(_media(part, key, rpath))
        out.append(
            {
                "role": "tool",
                "tool_call_id": cid,
                "content": content,
                "is_error": is_error,
                "name": name,
                "src": path,
            }
        )
        if own is not None:
            out[-1]["own"] = own
    return out


def _contents(data: JSONObj, st: _State) -> list[JSONObj]:
    out: list[JSONObj] = []
    system = data.get("systemInstruction")
    if system is not None:
        spath = "systemInstruction"
        sys_obj = obj(system, spath)
        for key in sys_obj:
            if key not in CONTENT_KEYS:  # the role of a system instruction means nothing
                raise InvalidRequest(f"{join(spath, key)}: unknown field {key!r}", param=join(spath, key))
        texts = []
        for j, raw in enumerate(req(sys_obj, "parts", list, spath)):
            bpath = join(join(spath, "parts"), j)
            part = obj(raw, bpath)
            for key in part:
                if key != "text":
                    raise unsupported(join(bpath, key), f"{key!r} in systemInstruction (text only)")
            text = req(part, "text", str, bpath)
            if text:
                texts.append({"type": "text", "text": text})
        if texts:
            out.append({"role": "system", "content": texts, "src": spath})
    contents = req(data, "contents", list, "")
    if not contents:
        raise InvalidRequest("contents: must contain at least one content", param="contents")
    for i, raw in enumerate(contents):
        path = join("contents", i)
        content = obj(raw, path)
        for key in content:
            if key not in CONTENT_KEYS:
                raise InvalidRequest(f"{join(path, key)}: unknown field {key!r}", param=join(path, key))
        role = opt(content, "role", str, path) or "user"
        if not req(content, "parts", list, path):
            ppath = join(path, "parts")
            raise InvalidRequest(f"{ppath}: must contain at least one part", param=ppath)
        if role == "model":
            parts: list[JSONObj] = []
            if st.last_index != i - 1:  # consecutive model contents are one model turn
                st.last_calls = []
            for j, part in enumerate(req(content, "parts", list, path)):
                bpath = join(join(path, "parts"), j)
                _model_part(obj(part, bpath), i, j, bpath, st, parts)
            st.last_index = i
            out.append({"role": "assistant", "content": parts, "src": path})
        elif role == "user":
            _user_turn(content, i, path, st, out)
        else:
            rpath = join(path, "role")
            raise InvalidRequest(f"{rpath}: unknown role {role!r} (expected user or model)", param=rpath)
    if st.bad_ids:
        raise refusal(st.bad_ids)
    return out


def parse_request(
    body: bytes, limits: InputLimits = DEFAULT_LIMITS, *, model: str = "", stream: bool = False
) -> Request:
    """Parse a Gemini ``generateContent`` body (JSON bytes) for ``model`` (from the URL path,
    ``models/`` prefix optional) into a :class:`Request`; ``stream`` for
    ``:streamGenerateContent``.

    Contents get ``src`` = ``"contents[i]"``, tool results and calls
    ``"contents[i].parts[j].functionResponse"`` / ``...functionCall``. ``include_usage`` is
    always True. Raises :class:`gateway.errors.InvalidRequest` naming the field for malformed
    JSON, wrong types, missing or empty ``contents``, unknown roles or fields, a
    ``functionResponse`` that answers no call (pairing rule: module docstring) and the refused
    features listed in the module docstring; :class:`gateway.errors.PayloadTooLarge` past the
    content or part ``limits``.
    """
    data = camel(load_body(body))
    check_contents_bounds(data, body, limits, _FREE_FORM)
    for key in data:
        if key not in _TOP_LEVEL:
            raise InvalidRequest(f"{key}: unknown field {key!r}", param=key)
    name = model_path(model or opt(data, "model", str, "") or "")
    if not name:
        raise InvalidRequest("model: the URL names no model (models/{model}:generateContent)", param="model")
    if data.get("cachedContent") is not None:
        raise unsupported("cachedContent", "cachedContent (a cache lives in one upstream project)")
    st = _State(_given_ids(opt(data, "contents", list, "") or []))
    out: JSONObj = {"model": name, "messages": _contents(data, st), "include_usage": True, "stream": stream}
    native = Native()
    has_mcp = False
    if "tools" in data:
        out["tools"], has_mcp = tools(data, native, limits)
    declared = {t["name"] for t in out.get("tools", ())}
    choice, validated = tool_choice(data, native, declared)
    if choice is not None:
        out["tool_choice"] = choice
    if validated:
        for tool in out.get("tools", ()):
            tool["strict"] = True
    generation(data, out, native)
    for key in PASSED:
        value = data.get(key)
        if value is not None:
            check(value, list if key == "safetySettings" else dict, key)
            native.add(key, value, key)
    for key in SERVING:
        value = data.get(key)
        if value is not None:
            native.add_serving(key, check(value, str, key))
    carried = native.dump()
    if carried is not None:
        out["native"] = carried
    if has_mcp:
        out["mcp_servers"] = mcp_server_entries(data)
    request = validate_request(out, _FIELD_NAMES)
    if _include_thoughts(data):
        return request
    return GeminiRequest.model_construct(**dict(request), show_thoughts=False)


def _include_thoughts(data: JSONObj) -> bool:
    """Whether ``generationConfig.thinkingConfig.includeThoughts`` is true (types checked by
    :func:`gateway.edges.gemini_options.generation`)."""
    gen = data.get("generationConfig")
    cfg = camel(gen).get("thinkingConfig") if type(gen) is dict else None
    return type(cfg) is dict and camel(cfg).get("includeThoughts") is True


class GeminiRequest(Request):
    """A :class:`Request` parsed by the Gemini edge whose answer shows no thought text
    (``show_thoughts`` False: the client did not set ``includeThoughts``); thought signatures
    are still rendered. The edge's alone: never dumped, never read below the edge."""

    show_thoughts: bool = Field(default=True, exclude=True)


def shows_thoughts(request: Request) -> bool:
    """Whether a Gemini client's answer carries thought text (see :class:`GeminiRequest`)."""
    return not isinstance(request, GeminiRequest) or request.show_thoughts


def parse_count_tokens(body: bytes, limits: InputLimits = DEFAULT_LIMITS, *, model: str = "") -> Request:
    """Parse a ``:countTokens`` body: ``{"contents": [...]}`` or
    ``{"generateContentRequest": {...}}`` (the whole request, its ``model`` optional). Raises
    as :func:`parse_request`."""
    data = camel(load_body(body))
    inner = data.get("generateContentRequest")
    if inner is not None:
        for key in data:
            if key != "generateContentRequest":
                raise InvalidRequest(f"{key}: give contents or generateContentRequest, not both", param=key)
        return parse_request(orjson.dumps(as_obj(inner, "generateContentRequest")), limits, model=model)
    return parse_request(body, limits, model=model)
