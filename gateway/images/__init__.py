"""Encoded images as inputs: a JPEG or PNG string per batch row, decoded into the pixels of a
numeric NHWC image input (OpenVINO Model Server's "binary inputs" rule).

Which inputs take them is the signature's rule (:attr:`gateway.serving.signature.Signature.
image_inputs`); this package turns the strings into the input's tensor, off the event loop:
:mod:`~gateway.images.codecs` (one image's header and pixels, and the refusals), :mod:`~gateway.
images.image_tensors` (a request's images → the input's tensor: sizes, resize, channel order, dtype,
scaling, bounds), :mod:`~gateway.images.options` (a model's ``image_options.json``, and the
flags' bounds) and :mod:`~gateway.images.decoder` (the front end's bounded decoding threads).
"""
