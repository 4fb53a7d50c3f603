"""TF Serving's surface: which services it registers and how, what observability may learn of a
call, and its REST API's place in the route table."""

from __future__ import annotations

import dataclasses

from gateway._pb.tensorflow_serving.apis import (
    inference_pb2,
    model_service_pb2,
    predict_pb2,
    prediction_service_pb2,
)
from gateway.config.management_paths import ManagementPaths
from gateway.config.settings import Settings
from gateway.serving.core import ServingCore
from gateway.tfserving import PROTOCOL
from gateway.tfserving.rest.routes import TfServingRest
from gateway.tfserving.surface import (
    MODEL_SERVICE,
    PREDICTION_SERVICE,
    TfServingOptions,
    TfServingSurface,
)
from gateway.transport.auth import AdminAccess
from gateway.transport.http.routes import Routes
from tests.support.grpc_handlers import check_handlers

CORE: ServingCore = None  # type: ignore[assignment]  # nothing here reaches the core
ADMIN = AdminAccess()


def test_the_flags_give_the_options() -> None:
    settings = Settings(
        model_base_path="/m",
        max_tensor_elements=5,
        max_request_bytes=6,
        enable_serialization_as_tensor_content=True,
        enable_signature_method_name_check=True,
        enable_model_management_api=True,
    )
    options = TfServingOptions.from_settings(settings)
    assert dataclasses.replace(options, admin=ADMIN) == TfServingOptions(
        5, 6, True, True, True, admin=ADMIN, paths=ManagementPaths()
    )


def test_prediction_is_bounded_and_both_services_tell_the_model_a_call_names() -> None:
    surface = TfServingSurface(CORE, TfServingOptions(max_elements=1, max_request_bytes=1))
    assert surface.name == PROTOCOL == "tfserving"
    prediction, model = surface.grpc_services()
    assert (prediction.name, model.name) == (
        "tensorflow.serving.PredictionService",
        "tensorflow.serving.ModelService",
    )
    assert (prediction.name, model.name) == (PREDICTION_SERVICE, MODEL_SERVICE)
    assert prediction.bounded and not model.bounded
    assert {prediction.protocol, model.protocol} == {PROTOCOL}
    request = predict_pb2.PredictRequest()
    request.model_spec.name = "m"
    assert prediction.model_of is not None and prediction.model_of(request) == "m"
    assert model.model_of is not None and model.model_of(object()) == ""
    multi = inference_pb2.MultiInferenceRequest()
    multi.tasks.add().model_spec.name = "first"
    multi.input.example_list.examples.add()
    multi.input.example_list.examples.add()
    assert prediction.model_of(multi) == "first"
    assert set(prediction.rows_of) == {"MultiInference"}
    assert prediction.rows_of["MultiInference"](multi) == 2


def test_each_service_has_a_handler_per_method_of_its_proto_and_predict_answers_bytes() -> None:
    prediction, model = TfServingSurface(CORE, TfServingOptions(1, 1)).grpc_services()
    services = prediction_service_pb2.DESCRIPTOR.services_by_name
    check_handlers(prediction, services["PredictionService"], encoded={"Predict"})
    check_handlers(model, model_service_pb2.DESCRIPTOR.services_by_name["ModelService"], ())


def test_the_rest_api_owns_v1() -> None:
    routes = Routes()
    TfServingSurface(CORE, TfServingOptions(1, 1)).add_routes(routes)
    api = routes.api_for("/v1/models/m:predict")
    assert isinstance(api, TfServingRest)
    assert routes.api_for("/v2/models/m") is None
