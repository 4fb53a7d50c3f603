"""Build the SavedModels of TF Serving's own model-server tests, in a process of their own
(TensorFlow and ``gateway._pb`` must never share one): :func:`compat_models_root` from a test, or
``python tf_compat_models_script.py ROOT``. TensorFlow is imported only in that process.

Writes, under ROOT (each ``<model>/<version>/`` a SavedModel tagged ``serve``):

- ``saved_model_half_plus_two_cpu/00000123``: the graph of TF Serving's
  ``servables/tensorflow/testdata/saved_model_half_plus_two.py`` (b = 2) as its committed test
  model has it — the ``tf_example`` placeholder of unknown rank
  (``half_plus_two_model_metadata.json`` shows ``unknown_rank: true``), an asset file and a main
  op that assigns its name. Signatures ``serving_default`` (x → y), ``classify_x_to_y``,
  ``regress_x_to_y``, ``regress_x_to_y2``, ``regress_x2_to_y3``.
- ``saved_model_half_plus_three/00000123``: the same graph with b = 3 and the two signatures of
  TF Serving's committed (TensorFlow 1.0-era) test model, which ``api_rest.md`` queries:
  ``serving_default`` (x → y) and ``tensorflow/serving/regress``, whose ``inputs`` is the
  ``tf_example`` placeholder declared ``DT_FLOAT`` (it takes serialized Examples) and whose
  ``outputs`` is ``y``; plus ``assets.extra/tf_serving_warmup_requests`` written by TensorFlow's
  own ``tf.io.TFRecordWriter`` with PredictionLog records (:data:`WARMUP_RECORDS`: predict,
  regress, multi_inference), as ``saved_model_warmup.md`` describes.
- ``signature_defs_doc/00000123``: the three SignatureDefs of ``signature_defs.md`` with its tensor
  names — ``my_classification_signature`` (inputs ``tf_example:0`` string; outputs
  ``index_to_string:0`` classes, ``TopKV2:0`` scores), ``my_prediction_signature`` (images
  ``x:0`` → scores ``y:0``), ``my_regression_signature`` (inputs ``x_input_examples_tensor_0`` →
  outputs ``y_outputs_0`` float); scores = top 2 of [x, 2x] with classes "one", "two". And
  ``classify_objects``, the signature of ``api_rest.md``'s binary example: features ``image``
  and ``caption`` (bytes) → classes "image", "caption" scored by their lengths.
- ``saved_model_half_plus_two_2_versions/00000123`` (+ an identical ``00000124``): TensorFlow's
  ``cc/saved_model/testdata/half_plus_two`` that TF Serving's REST handler tests serve — the same
  graph plus a ``classify_x2_to_y3`` signature.
- ``tf_saved_model_save/00000123``, ``tf_saved_model_save_multiple_signatures/00000123``,
  ``keras_sequential_saved_model_save/00000123``: the TF2 exports that
  ``tensorflow_model_server_test.py`` builds in its ``test_tf_saved_model_save*`` and
  ``test_sequential_keras_saved_model_save`` tests (with ``tf.saved_model.save``).

and ``ROOT/signature_defs.json``: per model, the ``signature_def`` map of its (first) version's
MetaGraphDef as ``MessageToDict`` gives it (proto field names, fields without presence printed) —
what TF Serving, which copies that map into GetModelMetadata, answers for it.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING or __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    v1 = tf.compat.v1

VERSION_DIR = "00000123"
SIGNATURE_DEFS = "signature_defs.json"
WARMUP_RECORDS = 3
"""Records in saved_model_half_plus_three's warmup file (the multi_inference one runs 1 task)."""


def compat_models_root(base: Path) -> Path:
    """``base/tf_compat_models`` holding every model above, built once (in a subprocess)."""
    from tests.support.tf_build import build_once  # not needed when run as the builder

    return build_once(__file__, base / "tf_compat_models", "TF Serving's test models")


def half_plus(
    export_dir: Path, b: float, *, classify_x2: bool = False, committed_three: bool = False
) -> None:
    """TF Serving's ``_generate_saved_model_for_half_plus_two`` (CPU, no TFLite, no MLMD)."""
    builder = v1.saved_model.builder.SavedModelBuilder(str(export_dir))
    info = v1.saved_model.utils.build_tensor_info
    build = v1.saved_model.signature_def_utils.build_signature_def
    consts = v1.saved_model.signature_constants
    with v1.Session(graph=tf.Graph()) as sess:
        a = v1.Variable(0.5, name="a")
        bias = v1.Variable(b, name="b")
        c = v1.Variable(3.0, name="c")
        serialized_tf_example = v1.placeholder(tf.string, name="tf_example")
        feature_configs = {
            "x": v1.io.FixedLenFeature([1], dtype=tf.float32),
            "x2": v1.io.FixedLenFeature([1], dtype=tf.float32, default_value=[0.0]),
        }
        tf_example = v1.io.parse_example(serialized_tf_example, feature_configs)
        for parsed in tf_example.values():  # TF 1.x inferred [?, 1] from an unknown-rank input
            parsed.set_shape([None, 1])
        x = tf.identity(tf_example["x"], name="x")
        y = tf.identity(tf.add(tf.multiply(a, x), bias), name="y")
        y2 = tf.identity(tf.add(tf.multiply(a, x), c), name="y2")
        x2 = tf.identity(tf_example["x2"], name="x2")
        a2 = v1.Variable(0.5, name="a2")
        c2 = v1.Variable(3.0, name="c2")
        y3 = tf.identity(tf.add(tf.multiply(a2, x2), c2), name="y3")

        # The asset file and the main op that assigns its name (upstream's _create_asset_file,
        # with the original file beside the export instead of under /tmp).
        assets = export_dir.parent / "original_assets"
        assets.mkdir(parents=True, exist_ok=True)
        (assets / "foo.txt").write_text("asset-file-contents")
        v1.add_to_collection(v1.GraphKeys.ASSET_FILEPATHS, tf.constant(str(assets / "foo.txt")))
        filename_tensor = v1.Variable(
            "foo.txt", name="filename_tensor", trainable=False, collections=[]
        )
        assign_filename_op = filename_tensor.assign("foo.txt")

        def regression(inp: tf.Tensor, out: tf.Tensor) -> object:
            return build(
                {consts.REGRESS_INPUTS: info(inp)},
                {consts.REGRESS_OUTPUTS: info(out)},
                consts.REGRESS_METHOD_NAME,
            )

        def classification(inp: tf.Tensor, scores: tf.Tensor) -> object:
            return build(
                {consts.CLASSIFY_INPUTS: info(inp)},
                {consts.CLASSIFY_OUTPUT_SCORES: info(scores)},
                consts.CLASSIFY_METHOD_NAME,
            )

        signature_def_map = {
            "regress_x_to_y": regression(serialized_tf_example, y),
            "regress_x_to_y2": regression(serialized_tf_example, y2),
            "regress_x2_to_y3": regression(x2, y3),
            "classify_x_to_y": classification(serialized_tf_example, y),
            consts.DEFAULT_SERVING_SIGNATURE_DEF_KEY: build(
                {"x": info(x)}, {"y": info(y)}, consts.PREDICT_METHOD_NAME
            ),
        }
        if classify_x2:
            signature_def_map["classify_x2_to_y3"] = classification(x2, y3)
        if committed_three:
            examples = info(serialized_tf_example)
            examples.dtype = tf.float32.as_datatype_enum  # as TF Serving's file declares it
            signature_def_map = {
                consts.DEFAULT_SERVING_SIGNATURE_DEF_KEY: signature_def_map[
                    consts.DEFAULT_SERVING_SIGNATURE_DEF_KEY
                ],
                consts.REGRESS_METHOD_NAME: build(
                    {consts.REGRESS_INPUTS: examples},
                    {consts.REGRESS_OUTPUTS: info(y)},
                    consts.REGRESS_METHOD_NAME,
                ),
            }
        sess.run(v1.global_variables_initializer())
        builder.add_meta_graph_and_variables(
            sess,
            [v1.saved_model.tag_constants.SERVING],
            signature_def_map=signature_def_map,
            assets_collection=v1.get_collection(v1.GraphKeys.ASSET_FILEPATHS),
            main_op=tf.group(assign_filename_op),
        )
    builder.save()
    shutil.rmtree(assets)


def warmup_file(export_dir: Path) -> None:
    """``assets.extra/tf_serving_warmup_requests`` of half_plus_three, by TensorFlow's writer."""
    from tensorflow_serving.apis import (
        inference_pb2,
        input_pb2,
        predict_pb2,
        prediction_log_pb2,
        regression_pb2,
    )

    examples = input_pb2.Input()
    for value in (1.0, 2.0):
        examples.example_list.examples.add().features.feature["x"].float_list.value.append(value)
    predict = predict_pb2.PredictRequest()
    predict.model_spec.name = "saved_model_half_plus_three"
    predict.inputs["x"].CopyFrom(tf.make_tensor_proto([1.0, 2.0], tf.float32))
    regress = regression_pb2.RegressionRequest(input=examples)
    regress.model_spec.signature_name = "tensorflow/serving/regress"
    multi = inference_pb2.MultiInferenceRequest(input=examples)
    task = multi.tasks.add()
    task.model_spec.name = "saved_model_half_plus_three"
    task.model_spec.signature_name = "tensorflow/serving/regress"
    task.method_name = "tensorflow/serving/regress"
    logs = [
        prediction_log_pb2.PredictionLog(
            predict_log=prediction_log_pb2.PredictLog(request=predict)
        ),
        prediction_log_pb2.PredictionLog(
            regress_log=prediction_log_pb2.RegressLog(request=regress)
        ),
        prediction_log_pb2.PredictionLog(
            multi_inference_log=prediction_log_pb2.MultiInferenceLog(request=multi)
        ),
    ]
    assert len(logs) == WARMUP_RECORDS
    path = export_dir / "assets.extra" / "tf_serving_warmup_requests"
    path.parent.mkdir(parents=True)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for log in logs:
            writer.write(log.SerializeToString())


def signature_defs_doc(export_dir: Path) -> None:
    """The SignatureDefs of ``signature_defs.md``, with its tensor names (module doc)."""
    builder = v1.saved_model.builder.SavedModelBuilder(str(export_dir))
    info = v1.saved_model.utils.build_tensor_info
    build = v1.saved_model.signature_def_utils.build_signature_def
    consts = v1.saved_model.signature_constants
    with v1.Session(graph=tf.Graph()) as sess:
        features = {"x": v1.io.FixedLenFeature([1], dtype=tf.float32)}
        serialized = v1.placeholder(tf.string, name="tf_example")
        x_example = v1.io.parse_example(serialized, features)["x"]
        both = tf.concat([x_example, 2 * x_example], axis=1)
        scores, indices = tf.nn.top_k(both, k=2)  # the op is named TopKV2
        classes = tf.gather(tf.constant(["one", "two"]), indices, name="index_to_string")
        images = v1.placeholder(tf.float32, shape=[None, 1], name="x")
        tf.identity(images * 10.0, name="y")
        regress_in = v1.placeholder(tf.string, name="x_input_examples_tensor_0")
        regress_x = v1.io.parse_example(regress_in, features)["x"]
        tf.identity(regress_x * 0.5 + 3.0, name="y_outputs_0")
        objects = v1.placeholder(tf.string, name="objects")
        parsed = v1.io.parse_example(
            objects,
            {
                "image": v1.io.FixedLenFeature([], dtype=tf.string),
                "caption": v1.io.FixedLenFeature([], dtype=tf.string),
            },
        )
        lengths = [tf.strings.length(parsed[k]) for k in ("image", "caption")]
        object_scores = tf.cast(tf.stack(lengths, axis=1), tf.float32)
        object_classes = tf.tile(tf.constant([["image", "caption"]]), [tf.shape(objects)[0], 1])
        graph = sess.graph

        def named(name: str) -> object:
            tensor_info = info(graph.get_tensor_by_name(name + ":0"))
            tensor_info.name = name  # the doc names these two without ":0"
            return tensor_info

        signature_def_map = {
            "my_classification_signature": build(
                {"inputs": info(serialized)},
                {"classes": info(classes), "scores": info(scores)},
                consts.CLASSIFY_METHOD_NAME,
            ),
            "my_prediction_signature": build(
                {"images": info(images)},
                {"scores": info(graph.get_tensor_by_name("y:0"))},
                consts.PREDICT_METHOD_NAME,
            ),
            "classify_objects": build(
                {"inputs": info(objects)},
                {"classes": info(object_classes), "scores": info(object_scores)},
                consts.CLASSIFY_METHOD_NAME,
            ),
            "my_regression_signature": build(
                {"inputs": named("x_input_examples_tensor_0")},
                {"outputs": named("y_outputs_0")},
                consts.REGRESS_METHOD_NAME,
            ),
        }
        builder.add_meta_graph_and_variables(
            sess, [v1.saved_model.tag_constants.SERVING], signature_def_map=signature_def_map
        )
    builder.save()


def tf_saved_model_save(export_dir: Path) -> None:
    """``test_tf_saved_model_save``: one concrete function, y = v1 * v2 * x (= 6 x)."""
    root = tf.train.Checkpoint()
    root.v1 = tf.Variable(3.0)
    root.v2 = tf.Variable(2.0)
    root.f = tf.function(lambda x: {"y": root.v1 * root.v2 * x})
    to_save = root.f.get_concrete_function(tf.TensorSpec(None, tf.float32))
    tf.saved_model.save(root, str(export_dir), to_save)


def tf_saved_model_save_multiple_signatures(export_dir: Path) -> None:
    """``test_tf_saved_model_save_multiple_signatures``: constant 1 and 2 under two keys."""
    root = tf.train.Checkpoint()
    root.f = tf.function(lambda x: {"y": 1.0}, input_signature=[tf.TensorSpec(None, tf.float32)])
    root.g = tf.function(lambda x: {"y": 2.0}, input_signature=[tf.TensorSpec(None, tf.float32)])
    tf.saved_model.save(
        root,
        str(export_dir),
        signatures={"serving_default": root.f, "custom_signature_key": root.g},
    )


def keras_sequential(export_dir: Path) -> None:
    """``test_sequential_keras_saved_model_save``: Input x float[-1, 1] → identity layer y.

    tf.keras 2 named the serving signature's tensors after the Input (``x``) and the last layer
    (``y``); Keras 3 says ``inputs`` / ``output_0``, so that signature is spelled out here.
    """
    import keras

    model = keras.Sequential(
        [
            keras.layers.Input(dtype="float32", shape=(1,), name="x"),
            keras.layers.Lambda(lambda t: t, name="y"),
        ]
    )
    serve = tf.function(lambda x: {"y": model(x)})
    signature = serve.get_concrete_function(tf.TensorSpec([None, 1], tf.float32, name="x"))
    tf.saved_model.save(model, str(export_dir), signatures=signature)


def signature_defs(export_dir: Path) -> dict[str, object]:
    """The SavedModel's serving MetaGraphDef ``signature_def`` map, as JSON-able dicts."""
    from google.protobuf import json_format
    from tensorflow.core.protobuf import saved_model_pb2

    saved_model = saved_model_pb2.SavedModel.FromString(
        (export_dir / "saved_model.pb").read_bytes()
    )
    (meta_graph,) = saved_model.meta_graphs
    return {
        name: json_format.MessageToDict(
            signature, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
        for name, signature in meta_graph.signature_def.items()
    }


def main(root: str) -> None:
    base = Path(root)
    half_plus(base / "saved_model_half_plus_two_cpu" / VERSION_DIR, 2.0)
    three = base / "saved_model_half_plus_three" / VERSION_DIR
    half_plus(three, 3.0, committed_three=True)
    warmup_file(three)
    signature_defs_doc(base / "signature_defs_doc" / VERSION_DIR)
    two_versions = base / "saved_model_half_plus_two_2_versions"
    half_plus(two_versions / VERSION_DIR, 2.0, classify_x2=True)
    shutil.copytree(two_versions / VERSION_DIR, two_versions / "00000124")
    tf_saved_model_save(base / "tf_saved_model_save" / VERSION_DIR)
    tf_saved_model_save_multiple_signatures(
        base / "tf_saved_model_save_multiple_signatures" / VERSION_DIR
    )
    keras_sequential(base / "keras_sequential_saved_model_save" / VERSION_DIR)
    expected = {model.name: signature_defs(model / VERSION_DIR) for model in sorted(base.iterdir())}
    (base / SIGNATURE_DEFS).write_text(json.dumps(expected, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
