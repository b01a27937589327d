"""Shared by the live class's tests over Streamlit's websocket protocol."""

import pytest

from tests.live_server import class_store, streamlit_server


@pytest.fixture
def server_and_store(tmp_path):
    """A real app server on a class store of its own: its URL and the store."""
    with class_store(tmp_path) as (_, store), streamlit_server() as (url, _):
        yield url, store
