import mindspore as ms

ms.set_context(mode=ms.GRAPH_MODE)
model = build()
model.train(1, dataset)
