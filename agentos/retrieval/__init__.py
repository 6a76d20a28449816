"""Retrieval: query understanding (words, time), ranked paths and their fusion, model and cross-encoder stages, entity
ranking; no tier state."""
