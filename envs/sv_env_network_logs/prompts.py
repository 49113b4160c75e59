"""How a flow record is posed to a model: a short system prompt with the answer schema, the flow as text."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sv_shared.contracts import Message

SYSTEM_PROMPT = (
    "You are a network security analyst. Decide whether the network flow is Benign or Malicious. "
    'Reply with JSON only: {"label": "Benign" | "Malicious" | "Abstain", "confidence": <number 0 to 1>, '
    '"rationale": "<at most 8 words>"}. Abstain only if the flow gives no basis for a decision.'
)


def _value(value: Any, unit: str = "") -> str:
    return "-" if value is None else f"{value}{unit}"


def render_flow(observation: Mapping[str, Any]) -> str:
    """One flow as compact text (Zeek conn.log vocabulary): short prompts keep generation fast."""
    duration = observation.get("duration_s")
    return (
        f"proto={observation.get('protocol')} service={_value(observation.get('service'))} "
        f"src={_value(observation.get('src_ip'))}:{_value(observation.get('src_port'))} "
        f"dst={_value(observation.get('dst_ip'))}:{_value(observation.get('dst_port'))}\n"
        f"duration={'-' if duration is None else f'{duration:.3f}s'} "
        f"state={_value(observation.get('conn_state'))} history={_value(observation.get('history'))}\n"
        f"bytes_out={_value(observation.get('bytes_out'))} bytes_in={_value(observation.get('bytes_in'))} "
        f"pkts_out={_value(observation.get('packets_out'))} pkts_in={_value(observation.get('packets_in'))}"
    )


def build_messages(observation: Mapping[str, Any]) -> list[Message]:
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": f"Flow:\n{render_flow(observation)}"},
    ]
