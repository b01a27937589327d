"""The matrix editors: their rules (editors: widget keys, cells read back), their labels and cell
messages (editor_labels), and drawing them (editor_widgets)."""
