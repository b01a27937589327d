"""The live class, the session's side: who is asking and the door (live), following and publishing,
the room's questions and answers, and the server's push that reruns a follower's page."""
