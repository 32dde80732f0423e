import mindspore as ms

ms.set_context(mode=ms.GRAPH_MODE, jit_config={'jit_level': 'O2'})
model = build()
model.train(1, dataset)
