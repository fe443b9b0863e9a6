"""The answer a judge must give, and how a reply is turned into one."""

from __future__ import annotations

import json
import re

from pydantic import BaseModel, ConfigDict, Field, ValidationError

FORMAT = ('Answer with one JSON object and nothing else: {"score": <number in [0, 1]>, '
          '"confidence": <number in [0, 1]>, "rationale": "<one short paragraph>"}')


class JudgeAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    score: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)
    rationale: str = Field(min_length=1)


class BadAnswer(ValueError):
    """A reply that is not a valid JudgeAnswer; the message says why, for the re-ask."""


_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.S)


def parse_answer(text: str, finish_reason: str = "stop") -> JudgeAnswer:
    if finish_reason == "length":
        raise BadAnswer("the answer was cut off at the token limit (finish_reason 'length'); "
                        "keep the rationale short")
    body = (text or "").strip()
    m = _FENCE.match(body)  # models often wrap JSON in a code fence despite being told not to
    if m:
        body = m.group(1)
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as e:
        raise BadAnswer(f"the answer is not JSON ({e.msg} at char {e.pos})") from None
    if not isinstance(obj, dict):
        raise BadAnswer(f"the answer is JSON {type(obj).__name__}, not an object")
    try:
        return JudgeAnswer.model_validate(obj)
    except ValidationError as e:
        why = "; ".join(f"{'.'.join(map(str, er['loc'])) or 'answer'}: {er['msg']}" for er in e.errors())
        raise BadAnswer(f"the answer does not fit the schema ({why})") from None


def retry_message(reason: str) -> str:
    return f"Your previous answer could not be used: {reason}. {FORMAT}"
