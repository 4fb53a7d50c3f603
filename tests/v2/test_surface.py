"""The Open Inference Protocol's surface: its one gRPC service and how it is registered, what
observability may learn of a call, its REST API's place in the route table, and its options."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from gateway._pb.inference import grpc_service_pb2 as pb
from gateway.config.settings import Settings
from gateway.transport.http.routes import Routes
from gateway.v2 import PROTOCOL
from gateway.v2.dataplane import V2Options
from gateway.v2.rest.routes import V2Rest
from gateway.v2.surface import SERVICE, V2Surface, model_of, options_from
from tests.support.grpc_handlers import check_handlers

CORE: Any = SimpleNamespace(models=None)  # nothing here reaches the core


def test_the_flags_give_the_options() -> None:
    settings = Settings(
        model_base_path="/m",
        max_tensor_elements=5,
        max_request_bytes=6,
        enable_model_management_api=True,
    )
    options = options_from(settings)
    assert (options.max_elements, options.max_request_bytes, options.management) == (5, 6, True)
    assert options.version and options.version != "unknown"


def test_one_bounded_service_that_tells_the_model_a_call_names() -> None:
    surface = V2Surface(CORE, V2Options(max_elements=1))
    assert surface.name == PROTOCOL == "v2"
    (service,) = surface.grpc_services()
    assert service.name == SERVICE == "inference.GRPCInferenceService"
    assert service.protocol == PROTOCOL and service.bounded and service.model_of is model_of
    assert model_of(pb.ModelInferRequest(model_name="m")) == "m"
    assert model_of(pb.ModelReadyRequest(name="r")) == "r"
    assert model_of(pb.RepositoryModelLoadRequest(model_name="l")) == "l"
    assert model_of(pb.ServerLiveRequest()) == "" and model_of(object()) == ""


def test_the_service_has_a_handler_per_method_of_its_proto_and_model_infer_answers_bytes() -> None:
    (service,) = V2Surface(CORE, V2Options(max_elements=1)).grpc_services()
    descriptor = pb.DESCRIPTOR.services_by_name["GRPCInferenceService"]
    check_handlers(service, descriptor, encoded={"ModelInfer"})


def test_the_rest_api_owns_v2() -> None:
    routes = Routes()
    V2Surface(CORE, V2Options(max_elements=1)).add_routes(routes)
    api = routes.api_for("/v2/models/m/infer")
    assert isinstance(api, V2Rest)
    assert routes.api_for("/v2") is api and routes.api_for("/v1/models/m") is None
    assert api is not None
    call = api.parse("POST", "/v2/models/m/versions/3/infer")
    assert (call.protocol, call.api, call.model, call.version) == (PROTOCOL, "ModelInfer", "m", 3)
    assert call.route == "/v2/models/{model_name}/versions/{model_version}/infer"
    labelled = api.parse("GET", "/v2/models/m/versions/stable")
    assert (labelled.api, labelled.version) == ("ModelMetadata", None)
    refused = api.parse("GET", "/v2/models/m/infer")
    assert refused.api == "unknown" and refused.refusal is not None
