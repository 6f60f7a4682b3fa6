"""Embedding models, ONNX preparation, the vector table and the ANN index."""
