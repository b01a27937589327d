"""What a browser page and the server said to each other over Streamlit's websocket, decoded, for a
browser test that fails: which reruns the page asked for (a tap's widget, a fragment, a poll's
tick) and which runs the server started and finished for it. ``MessageLog(page)`` listens from then
on; ``write(path)`` keeps one line per message."""

from __future__ import annotations

import time
from pathlib import Path

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.st_protocol import element_key


def back_line(payload: bytes) -> str:
    """A message the page sent: a rerun (its fragment and the widgets it triggered) or its kind."""
    message = BackMsg.FromString(payload)
    kind = message.WhichOneof("type")
    if kind != "rerun_script":
        return f"-> {kind}"
    state = message.rerun_script
    widgets = state.widget_states.widgets
    triggered = [element_key(w.id) or w.id for w in widgets if w.HasField("trigger_value")]
    return (f"-> rerun fragment={state.fragment_id[:8] or 'app'} auto={state.is_auto_rerun} "
            f"widgets={len(widgets)} triggered={triggered}")


def forward_line(payload: bytes) -> str:
    """A message the server sent: a run's start and end, a delta (with its run and fragment), ..."""
    message = ForwardMsg.FromString(payload)
    kind = message.WhichOneof("type")
    run = message.metadata.run.script_run_id[:8] if message.metadata.HasField("run") else ""
    if kind == "new_session":
        return f"<- new_session run={run}"
    if kind == "script_finished":
        return f"<- script_finished {ForwardMsg.ScriptFinishedStatus.Name(message.script_finished)} run={run}"
    if kind == "delta":
        path = ".".join(map(str, message.metadata.delta_path))
        return f"<- delta {message.delta.WhichOneof('type')} path={path} run={run} " \
               f"fragment={message.delta.fragment_id[:8]}"
    if kind == "session_status_changed":
        return f"<- status running={message.session_status_changed.script_is_running}"
    return f"<- {kind} run={run}"


class MessageLog:
    def __init__(self, page):
        self.lines: list[str] = []
        self.started = time.monotonic()
        page.on("websocket", self._watch)

    def _watch(self, socket) -> None:
        socket.on("framesent", lambda payload: self._add(back_line, payload))
        socket.on("framereceived", lambda payload: self._add(forward_line, payload))

    def _add(self, decode, payload) -> None:
        try:
            line = decode(payload) if isinstance(payload, bytes) else f"text {payload[:60]!r}"
        except Exception as error:  # noqa: BLE001 - a log for a failure must not fail itself
            line = f"undecoded ({error})"
        self.lines.append(f"{time.monotonic() - self.started:8.3f} {line}")

    def mark(self, what: str) -> None:
        """A line of the test's own: what it did, when."""
        self.lines.append(f"{time.monotonic() - self.started:8.3f} ** {what}")

    def write(self, path: Path) -> None:
        path.write_text("\n".join(self.lines) + "\n")

    def tail(self, count: int = 30) -> str:
        """The last messages, without the elements' deltas: for a failure's message (CI prints it)."""
        return "\n".join([line for line in self.lines if "<- delta" not in line][-count:])
