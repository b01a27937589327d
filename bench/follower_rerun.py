"""Server CPU of one follower's page rerun on the presenter's softmax screen, with no question and
with the drawn forecast open (what 100 followers pay on each of the teacher's changes; see
bench/class_load.py for the whole class over the websocket protocol).

Run: PYTHONPATH=. .venv/bin/python bench/follower_rerun.py [--reruns 30]

AppTest runs the script as the server does (same ScriptRunner), in this process: the figure is the
process CPU time per rerun (AppTest's own bookkeeping included, the same for both states).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time


def cpu_per_rerun(student, reruns: int) -> float:
    for _ in range(3):
        student.run()
    started = time.process_time()
    for _ in range(reruns):
        student.run()
    return (time.process_time() - started) / reruns * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reruns", type=int, default=30)
    args = parser.parse_args()
    os.environ["MHA_DATA_DIR"] = tempfile.mkdtemp()
    os.environ.pop("REDIS_URL", None)
    from tests.apptest_util import goto, open_address
    from tests.classroom.test_live import rerun_after_a_poll, teacher_with_room

    teacher, code = teacher_with_room()
    goto(teacher, "present")
    for _ in range(3):
        teacher.button(key="present_next").click().run()  # screen 4: scale, then softmax
    student = open_address({"room": code})
    rerun_after_a_poll(student)
    quiet = cpu_per_rerun(student, args.reruns)
    teacher.button(key="present_draw").click().run()
    rerun_after_a_poll(student)
    drawing = cpu_per_rerun(student, args.reruns)
    print(f"follower rerun, presenter screen 4: {quiet:.1f} ms CPU with no question, {drawing:.1f} ms with "
          f"the drawn forecast open ({args.reruns} reruns each)")


if __name__ == "__main__":
    main()
