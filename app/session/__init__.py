"""A session's state: the arrays' bases and their resizing (state), this run's Setup and result
(this_run), the address (address), opening over edits and Undo (opening), and the registry of the
session keys every module owns (session_keys)."""
