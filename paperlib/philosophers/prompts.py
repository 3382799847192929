"""Philosopher prompts, versioned by name and recorded (with a hash) in every step row.

A prompt is a system message (the rules and the tools: identical for every
philosopher, so a backend can reuse its computation) and a user message (the
philosopher's observation). Tools go through the model's chat template (``tools=``)
where it supports them; otherwise they are written into the system message in a
plain-text format with the Hermes ``<tool_call>`` call syntax.

The wording is ours [ours]: the paper wraps each agent in LangGraph and does not
print its prompt. Versions differ in how much help the user message gives; choosing
a version by valid-call rate is fair, choosing it by reward is not.
"""

from __future__ import annotations

from dataclasses import dataclass

from paperlib.philosophers.env import TOOLS, Observation
from paperlib.philosophers.parsing import RATIONALE_TAG

TOOL_DESCRIPTIONS = {
    "pick_up_left": "Pick up your left fork, if it is free.",
    "pick_up_right": "Pick up your right fork, if it is free.",
    "put_down_left": "Put down your left fork, if you hold it.",
    "put_down_right": "Put down your right fork, if you hold it.",
    "eat": "Eat. Succeeds only while you hold both forks.",
    "think": "Think for this round and do nothing else.",
}

TOOL_SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": TOOL_DESCRIPTIONS[name],
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in TOOLS
]

RULES = (
    "You are a philosopher at a round table with {n} philosophers and {n} forks, one fork between "
    "each pair of neighbours. To eat you must hold both your left and your right fork. A fork held "
    "by a neighbour cannot be taken. After eating you keep your forks until you put them down, and "
    "you must put both down before you can eat again. If every philosopher holds exactly one fork, "
    "nobody can ever eat again: that is a deadlock and ends the dinner. Your goal: everyone eats, "
    "fairly, and the table never deadlocks. Each round you call exactly one tool."
)

PLAIN_TOOLS = (
    '\n\nTools:\n{tool_lines}\n\nTo call a tool, answer with one line:\n<tool_call>{{"name": "TOOL_NAME"}}</tool_call>'
)

# The knowing-doing lens at the table [ours] (``paperlib.philosophers.knowing_doing``): one
# tool name in an XML-like tag, like the <tool_call> and <ucb_values> tags the models
# already meet. The instruction states the rule, as paper B tells its model the UCB rule.
RATIONALE_FORMAT = f"<{RATIONALE_TAG}>TOOL_NAME</{RATIONALE_TAG}>"
RATIONALE_INSTRUCTION = (
    "Before you call a tool, say which tool is sensible for you right now, written as "
    f"{RATIONALE_FORMAT} with exactly one tool name. The sensible tool: with both forks, eat if "
    "you may eat, otherwise put one fork down; with one fork, pick up the other one if it is free "
    "and you may eat, otherwise put your fork down; with no fork, pick up a fork if both are free, "
    "otherwise think. Then make your tool call."
)

# The prefix a constrained decision forces before scoring each tool name.
CALL_PREFIX = '<tool_call>{"name": "'
CALL_SUFFIX = '"'
STOP = ["</tool_call>"]


def _fork(holds: bool, free: bool) -> str:
    return "in your hand" if holds else ("free on the table" if free else "held by your neighbour")


def describe(obs: Observation) -> str:
    lines = [
        f"You are philosopher {obs.philosopher}. Round {obs.round}.",
        f"Your left fork is {_fork(obs.holds_left, obs.left_free)}.",
        f"Your right fork is {_fork(obs.holds_right, obs.right_free)}.",
        f"You have eaten {obs.meals} time{'s' if obs.meals != 1 else ''}.",
    ]
    if not obs.ready:
        lines.append("You must put both forks down before you can eat again.")
    return "\n".join(lines)


@dataclass(frozen=True)
class PromptVersion:
    name: str
    list_options: bool  # the user message ends by listing the six tool names
    ask_rationale: bool = False  # first name the sensible tool in <sensible>TOOL</sensible> (free decisions only)

    def system(self, n: int, native_tools: bool) -> str:
        text = RULES.format(n=n)
        if not native_tools:
            tool_lines = "\n".join(f"- {name}: {TOOL_DESCRIPTIONS[name]}" for name in TOOLS)
            text += PLAIN_TOOLS.format(tool_lines=tool_lines)
        return text

    def user(self, obs: Observation) -> str:
        text = describe(obs)
        if self.ask_rationale:
            text += "\n\n" + RATIONALE_INSTRUCTION + " Tools: " + ", ".join(TOOLS) + "."
        elif self.list_options:
            text += "\n\nChoose one tool: " + ", ".join(TOOLS) + ". Answer with the tool call only."
        else:
            text += "\n\nWhat do you do?"
        return text

    def conversation(self, obs: Observation, native_tools: bool) -> list[dict]:
        return [
            {"role": "system", "content": self.system(obs.n, native_tools)},
            {"role": "user", "content": self.user(obs)},
        ]


PROMPTS = {
    # the rules and tools only, as an agent framework would pass them
    "rules-v1": PromptVersion("rules-v1", list_options=False),
    # the same, and the user message lists the options (helps small models name a tool)
    "options-v1": PromptVersion("options-v1", list_options=True),
    # paper B's knowing-doing study at the table: state the sensible tool, then call one [ours]
    "sensible-v1": PromptVersion("sensible-v1", list_options=True, ask_rationale=True),
}
DEFAULT_PROMPT = "options-v1"


def get_prompt(name: str) -> PromptVersion:
    try:
        return PROMPTS[name]
    except KeyError:
        raise ValueError(f"unknown prompt version {name!r}; choose one of {', '.join(PROMPTS)}") from None
