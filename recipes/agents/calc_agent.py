"""A calculator agent in Python with only the standard library (urllib), no triad import.

The kind of program triad trains through its agent gateway (docs/gateway.md). It asks the model
the instance's question with one tool, ``calculator(expression)``, runs the calls the model makes
and stops when the model answers without a tool call, or after ``TRIAD_MAX_TURNS`` calls. It
reports no reward itself: it exits 0 and the task's reward function (``calc-reward.ts``) rewards
the episode over its messages.

Environment (set by triad): ``OPENAI_BASE_URL`` (the session's base URL), ``OPENAI_API_KEY``,
``TRIAD_INSTANCE`` (``{"question", "answer", "index"}``), ``TRIAD_MAX_TURNS``.
"""

import ast
import json
import operator
import os
import sys
import urllib.request

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Evaluate an arithmetic expression with + - * / and parentheses.",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
]

OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def calculate(expression: str) -> float:
    """+ - * / over numbers, read by Python's parser, never evaluated as code."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in OPS:
            return OPS[type(node.op)](value(node.left), value(node.right))
        raise ValueError("only + - * / over numbers")

    return value(ast.parse(expression, mode="eval").body)


def chat(messages: list) -> dict:
    """One call of POST {OPENAI_BASE_URL}/chat/completions; the reply's message."""
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"].rstrip("/") + "/chat/completions",
        data=json.dumps({"model": "policy", "messages": messages, "tools": TOOLS}).encode(),
        headers={
            "authorization": "Bearer " + os.environ["OPENAI_API_KEY"],
            "content-type": "application/json",
        },
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=120) as reply:
        return json.load(reply)["choices"][0]["message"]


def main() -> int:
    instance = json.loads(os.environ.get("TRIAD_INSTANCE", "{}"))
    if not isinstance(instance.get("question"), str):
        print('calc_agent.py: TRIAD_INSTANCE must be {"question": string, ...}', file=sys.stderr)
        return 2
    messages = [
        {"role": "system", "content": "You are a careful calculator. Use the calculator tool, then state the answer."},
        {"role": "user", "content": instance["question"]},
    ]
    for _ in range(int(os.environ.get("TRIAD_MAX_TURNS", "4"))):
        message = chat(messages)
        # Sent back as it came: the gateway then reuses the ids it sampled.
        messages.append(message)
        calls = message.get("tool_calls") or []
        if not calls:
            break
        for call in calls:
            try:
                content = str(calculate(str(json.loads(call["function"]["arguments"])["expression"])))
            except Exception as err:  # a bad call is the model's mistake, answered as a tool result
                content = "error: " + str(err)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
    return 0


if __name__ == "__main__":
    sys.exit(main())
