"""Turn any model completion into one philosopher action.

``parse_action(text)`` returns one of the six tool names in ``TOOL_NAMES`` or
``NO_ACTION`` ("none": the model made no call we can read). It never raises.

Rules, applied in this order:

1. **Not a string** -> "none".
2. **Reasoning and echoed tool lists are dropped.** A closed ``<think>...</think>``
   block is removed (a call written while reasoning is not an action) and the text
   after it is parsed. A ``<think>`` left open (truncated generation) drops
   everything after it: the model never finished thinking, so only text *before*
   the open tag can hold a call, and usually the result is "none". A ``</think>``
   with no opening tag (the template opened the block in the prompt) drops
   everything before it. ``<tools>...</tools>`` blocks get the same treatment, so
   a model that repeats the tool schema from its system prompt has not called
   ``pick_up_left``. Tags are matched case-insensitively.
3. **Explicit call syntax anywhere wins; the first valid one by position.** These
   forms are scanned together, left to right:

   - function-call syntax ``eat()``, ``pick_up_left(fork=1)``, ``[think()]``,
     ``default_api.eat()`` (Llama ``<|python_tag|>``, Gemma ``tool_code``). Only the
     opening parenthesis is required, so a truncated ``eat(`` still counts;
   - a quoted value under a ``name`` / ``tool`` / ``tool_name`` / ``action`` /
     ``function`` / ``function_name`` key: ``{"name": "eat", ...}``. This covers
     Hermes/Qwen ``<tool_call>`` JSON (closed, unclosed or cut off mid-object),
     OpenAI ``tool_calls`` / ``{"function": {"name": ...}}``, ``{"tool": ...}``,
     ``{"action": ...}``, JSON in ``json`` fences, single quotes, trailing commas
     and JSON escaped inside a string. It is a key-value scan, not a JSON parse,
     so broken JSON is read like good JSON and ``arguments`` of any shape are
     ignored (the tools take none);
   - a bare name inside the tag: ``<tool_call>eat</tool_call>``,
     ``<function=eat>``;
   - a ReAct-style line ``Action: think`` anywhere in the text (the line must be
     just the label and one name: ``Action: think because...`` does not count).

   A name that is not one of the six tools (``eat_spaghetti()``,
   ``{"name": "grab_fork"}``) is skipped and the scan goes on to the next call.
4. **Otherwise a bare tool name on the first line.** The first line that has any
   content once markdown (``*`` ``#`` ``>`` backticks, quotes, brackets, list
   markers, code-fence lines), special tokens (``<|im_end|>``), trailing
   punctuation and a label (``Action:``, ``Answer:``, ``Tool:``, ``Final answer:``
   ...) are stripped must be exactly one tool name: "think", "`eat`",
   "**Action:** pick_up_right", "Pick up left." all count. Anything else on that
   line -- prose such as "I will pick up the left fork." or "I could eat or think"
   -- means "none"; later lines are not read for bare names.
5. Otherwise "none".

Names are normalised before the lookup: case is ignored, runs of spaces or hyphens
become ``_`` and a dotted prefix is dropped, so "PICK_UP_LEFT", "pick up left",
"pick-up-left" and "functions.pick_up_left" are all ``pick_up_left``. Nothing
fuzzier is accepted ("pickup_left", "pick_up_left_fork" are unknown).

Every regular expression here is bounded or scans linearly, so a completion of any
length is parsed in linear time (100k characters of noise take milliseconds).
"""

from __future__ import annotations

import re

TOOL_NAMES = ("pick_up_left", "pick_up_right", "put_down_left", "put_down_right", "eat", "think")
NO_ACTION = "none"

# Blocks whose contents are never an action: reasoning, and an echoed tool list.
# A stated rationale (``<sensible>TOOL</sensible>``, the knowing-doing prompt version) names
# a tool without calling it: it is dropped before the scan for a call.
RATIONALE_TAG = "sensible"
RATIONALE_PATTERN = re.compile(
    rf"<\s{{0,3}}{RATIONALE_TAG}\s{{0,3}}>([^<>]{{0,80}})<\s{{0,3}}/\s{{0,3}}{RATIONALE_TAG}\s{{0,3}}>", re.IGNORECASE
)
_BLOCK_TAG = re.compile(r"<(/?)(think|tools)>", re.IGNORECASE)

# One alternative per explicit form; finditer walks them together, left to right.
_CALL = re.compile(
    r"""
      \b(?P<func>[A-Za-z][\w\-]{0,39})\(                          # eat(  pick_up_left(
    | (?<!\w)["']?(?:name|tool|tool_name|action|function|function_name)["']?
      \s*:\s*["'](?P<value>[^"'\n]{1,40})["']                     # "name": "eat"
    | <tool_call>\s*(?P<tag>[A-Za-z][\w \-]{0,39})\s*(?:</tool_call>|\Z)
    | <function=(?P<fn>[\w.\-]{1,40})>                           # <function=eat>
    | ^[^\w\n]{0,10}action[^\w\n]{0,5}[:=][^\w\n]{0,5}                # Action: eat
      (?P<react>[A-Za-z][\w \-]{0,39}?)[^\w\n]{0,5}$              #   (the whole line)
    """,
    re.IGNORECASE | re.MULTILINE | re.VERBOSE,
)

_FENCE_LINE = re.compile(r"^\s*(```|~~~)[\w\-]*\s*$")
_SPECIAL_TOKEN = re.compile(r"<\|?/?[\w\-]{0,30}\|?>")
_LABEL = re.compile(
    r"^(?:(?:final|next|my|chosen)\s+)?"
    r"(?:action|tool[ _]?call|tool|function[ _]?call|function|call|answer|response|"
    r"output|choice|decision|move|name)\s*[:=\-]\s*",
    re.IGNORECASE,
)
_EDGE_JUNK = " \t*#>`'\"[](){}"
_LIST_MARKER = re.compile(r"^(?:[-+*•]|\d{1,3}[.)])\s+")


def normalise(name: str) -> str | None:
    """The tool a name refers to ("PICK UP-left" -> "pick_up_left"), or None."""
    s = re.sub(r"[\s\-]+", "_", name.strip().strip(_EDGE_JUNK).lower())
    s = s.rsplit(".", 1)[-1]
    return s if s in TOOL_NAMES else None


def strip_reasoning(text: str) -> str:
    """``text`` without closed/open think (and tools) blocks, as in rule 2 above."""
    kept: list[str] = []
    pos = 0  # start of the text not yet kept or dropped
    inside: str | None = None  # tag of the block we are in, if any
    for m in _BLOCK_TAG.finditer(text):
        closing, tag = m.group(1) == "/", m.group(2).lower()
        if inside is None and not closing:  # a block opens: keep what came before
            kept.append(text[pos : m.start()])
            inside = tag
        elif inside == tag and closing:  # the block closes: drop it
            inside = None
            pos = m.end()
        elif inside is None and closing:  # closes a block opened in the prompt
            kept = []
            pos = m.end()
    if inside is None:
        kept.append(text[pos:])
    return "".join(kept)


def _explicit_call(text: str) -> str | None:
    for m in _CALL.finditer(text.replace('\\"', '"')):
        raw = next(g for g in m.groups() if g is not None)
        tool = normalise(raw)
        if tool is not None:
            return tool
    return None


def _bare_first_line(text: str) -> str | None:
    for line in text.splitlines():
        if not line.strip() or _FENCE_LINE.match(line):
            continue
        s = _SPECIAL_TOKEN.sub("", line).strip().strip(_EDGE_JUNK)
        s = _LIST_MARKER.sub("", s).strip(_EDGE_JUNK)
        s = _LABEL.sub("", s).strip(_EDGE_JUNK).rstrip(".!?,;:").strip(_EDGE_JUNK)
        if s:
            return normalise(s)
    return None


def parse_action(text: object) -> str:
    """The action in a completion: one of ``TOOL_NAMES`` or ``NO_ACTION``.

    Precedence (details in the module docstring): drop closed ``<think>`` blocks
    (and everything after an unclosed one); then the first explicit call by
    position -- ``eat()``, ``{"name": "eat"}`` in any JSON-ish shape or tag,
    ``<tool_call>eat</tool_call>``, ``Action: eat`` -- skipping unknown names;
    else a first content line that is exactly one tool name; else "none".
    Never raises: non-strings and anything unexpected give "none".
    """
    if not isinstance(text, str):
        return NO_ACTION
    try:
        body = RATIONALE_PATTERN.sub(" ", strip_reasoning(text))
        return _explicit_call(body) or _bare_first_line(body) or NO_ACTION
    except Exception:  # a parser bug must not crash an episode; count it as no action
        return NO_ACTION
