"""Embedders: text to vectors (`base`), backed by models (`services`, `bge`), and specs resolved (`resolve`)."""
