"""int8 DNN inference on chains of dataflow tiles: networks, reference, tile format, partitioner."""
