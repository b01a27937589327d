"""The live class: a store of rooms a class follows and questions it answers (see classroom.store)."""

from classroom.store import (
    CODE_ALPHABET,
    FOLLOWER_TTL_SECONDS,
    HEARTBEAT_SECONDS,
    MAX_ROOMS,
    MAX_STUDENTS_PER_ROOM,
    ROOM_IDLE_HOURS,
    Answer,
    ClassroomStore,
    InvalidInput,
    LimitReached,
    NoSuchQuestion,
    NoSuchRoom,
    NotTheTeacher,
    Question,
    QuestionClosed,
    Room,
    RoomState,
    StoreError,
    StoreUnavailable,
    Tally,
    new_student_id,
    open_store,
)

__all__ = [
    "CODE_ALPHABET", "FOLLOWER_TTL_SECONDS", "HEARTBEAT_SECONDS", "MAX_ROOMS", "MAX_STUDENTS_PER_ROOM",
    "ROOM_IDLE_HOURS", "Answer", "ClassroomStore", "InvalidInput", "LimitReached", "NoSuchQuestion",
    "NoSuchRoom", "NotTheTeacher", "Question", "QuestionClosed", "Room", "RoomState", "StoreError",
    "StoreUnavailable", "Tally", "new_student_id", "open_store",
]
