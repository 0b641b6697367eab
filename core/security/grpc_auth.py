"""Authentication of gRPC APIs (nimbus now, DRPC next): who is calling (API.md section 14).

Server side, for any ``grpc.server``:

- :func:`server_credentials` (``None`` for a plaintext port): TLS with ``squall.tls.cert`` /
  ``squall.tls.key`` when both are set; with ``nimbus.authentication: mtls`` it also demands a
  client certificate signed by ``squall.tls.ca``.
- :class:`AuthInterceptor`: every call is authenticated before its handler runs. ``token``:
  the call's ``squall-auth-token`` metadata must be a token of ``nimbus.auth.tokens``; ``mtls``:
  the user is the client certificate's common name. A refused call ends with
  ``UNAUTHENTICATED`` and one clear message; the server logs one line per refusing reason and
  peer address (not per call). The handler runs with :func:`current_user` set (also while a
  streaming response is produced). ``none``: every caller is the anonymous user ``None``.

Client side: :func:`client_channel` opens a channel with the conf's credentials: TLS when
``squall.tls.ca`` is set (a client certificate too when ``squall.tls.cert`` / ``.key`` are),
and ``squall.auth.token`` sent with every call.
"""
from __future__ import annotations

import collections
import contextvars
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import grpc

from squall.errors import ConfigError
from squall.security import FirstSeen, user_for_token
from squall.security.settings import authentication_mode, tls_files

log = logging.getLogger(__name__)

#: gRPC metadata key carrying ``squall.auth.token``
TOKEN_METADATA = "squall-auth-token"
_USER: contextvars.ContextVar[str | None] = contextvars.ContextVar("squall_user", default=None)

__all__ = ["TOKEN_METADATA", "AuthInterceptor", "client_channel", "current_user",
           "server_credentials"]


def current_user() -> str | None:
    """The authenticated user of the call this handler thread serves (``None`` when
    authentication is off)."""
    return _USER.get()


def _read(path: str, key: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ConfigError(f"{key}: cannot read {path}: {exc.strerror or exc}") from exc


def server_credentials(conf: Mapping[str, Any]) -> grpc.ServerCredentials | None:
    """TLS credentials for a server port, or ``None`` (plaintext) when ``squall.tls.cert`` and
    ``squall.tls.key`` are not both set. ConfigError when mtls lacks a file or one is
    unreadable."""
    mode = authentication_mode(conf)
    if mode != "mtls" and not (conf.get("squall.tls.cert") and conf.get("squall.tls.key")):
        return None
    files = tls_files(conf, required=("squall.tls.ca", "squall.tls.cert", "squall.tls.key")
                      if mode == "mtls" else ("squall.tls.cert", "squall.tls.key"),
                      why=f"nimbus.authentication: {mode}" if mode == "mtls" else "a TLS port")
    ca = _read(files["ca"], "squall.tls.ca") if "ca" in files else None
    pair = (_read(files["key"], "squall.tls.key"), _read(files["cert"], "squall.tls.cert"))
    return grpc.ssl_server_credentials([pair], root_certificates=ca,
                                       require_client_auth=mode == "mtls")


def channel_credentials(conf: Mapping[str, Any]) -> grpc.ChannelCredentials | None:
    """TLS credentials for a client channel, or ``None`` (plaintext) without ``squall.tls.ca``.
    With ``nimbus.authentication: mtls`` the client certificate and key are required."""
    mode = authentication_mode(conf)
    if mode == "mtls":
        files = tls_files(conf, why="a client of nimbus.authentication: mtls")
    elif conf.get("squall.tls.ca"):
        files = tls_files(conf, required=("squall.tls.ca",), why="a TLS client")
    else:
        return None
    key = _read(files["key"], "squall.tls.key") if "key" in files and "cert" in files else None
    cert = _read(files["cert"], "squall.tls.cert") if key is not None else None
    return grpc.ssl_channel_credentials(root_certificates=_read(files["ca"], "squall.tls.ca"),
                                        private_key=key, certificate_chain=cert)


class _CallDetails(collections.namedtuple(
        "_CallDetails", ("method", "timeout", "metadata", "credentials", "wait_for_ready",
                         "compression")), grpc.ClientCallDetails):
    """A copy of a call's details with other metadata."""


class _TokenInterceptor(grpc.UnaryUnaryClientInterceptor, grpc.UnaryStreamClientInterceptor,
                        grpc.StreamUnaryClientInterceptor, grpc.StreamStreamClientInterceptor):
    """Adds the ``squall-auth-token`` metadata to every call of a channel."""

    def __init__(self, token: str) -> None:
        self._token = token

    def _details(self, details: Any) -> _CallDetails:
        metadata = [*(details.metadata or ()), (TOKEN_METADATA, self._token)]
        return _CallDetails(details.method, details.timeout, metadata, details.credentials,
                            getattr(details, "wait_for_ready", None),
                            getattr(details, "compression", None))

    def intercept_unary_unary(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_unary_stream(self, continuation: Any, details: Any, request: Any) -> Any:
        return continuation(self._details(details), request)

    def intercept_stream_unary(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)

    def intercept_stream_stream(self, continuation: Any, details: Any, requests: Any) -> Any:
        return continuation(self._details(details), requests)


def client_channel(conf: Mapping[str, Any], address: str,
                   options: list[tuple[str, Any]] | None = None) -> grpc.Channel:
    """A channel to ``address`` carrying this conf's credentials (see the module docstring).
    ConfigError when a configured TLS file is missing or unreadable."""
    creds = channel_credentials(conf)
    channel = (grpc.secure_channel(address, creds, options=options) if creds is not None
               else grpc.insecure_channel(address, options=options))
    token = conf.get("squall.auth.token")
    if token:
        channel = grpc.intercept_channel(channel, _TokenInterceptor(str(token)))
    return channel


class AuthInterceptor(grpc.ServerInterceptor):
    """Authenticates every call of a server (see the module docstring). ``service`` names the
    server in messages (``nimbus``, ``DRPC``). ConfigError at construction for ``token`` mode
    without any token."""

    def __init__(self, conf: Mapping[str, Any], service: str = "nimbus") -> None:
        self._mode = authentication_mode(conf)
        self._conf = {"nimbus.auth.tokens": dict(conf.get("nimbus.auth.tokens") or {})}
        self._service = service
        if self._mode == "token" and not self._conf["nimbus.auth.tokens"]:
            raise ConfigError("nimbus.authentication is token but nimbus.auth.tokens is empty: "
                              "no client could call " + service)
        self._logged = FirstSeen()

    @property
    def mode(self) -> str:
        return self._mode

    def authenticate(self, metadata: Mapping[str, Any], context: grpc.ServicerContext
                     ) -> tuple[str | None, str]:
        """``(user, "")`` or ``(None, reason)`` for one call."""
        if self._mode == "token":
            token = metadata.get(TOKEN_METADATA)
            if not token:
                return None, "no token (set squall.auth.token)"
            user = user_for_token(self._conf, str(token))
            return (user, "") if user else (None, "unknown token (check squall.auth.token)")
        names = (context.auth_context() or {}).get("x509_common_name") or []
        if not names:
            return None, "no client certificate (set squall.tls.cert and squall.tls.key)"
        name = names[0]
        return (name.decode() if isinstance(name, bytes) else str(name)), ""

    def _refused(self, context: grpc.ServicerContext, method: str, reason: str) -> None:
        peer = (context.peer() or "?").rsplit(":", 1)[0]
        if self._logged.first((peer, reason)):
            log.warning("%s refused a call from %s (%s): %s; further refusals for this reason "
                        "from this peer are not logged", self._service, peer,
                        method.rsplit("/", 1)[-1], reason)
        context.abort(grpc.StatusCode.UNAUTHENTICATED,
                      f"{self._service} refused the call: {reason}")

    def intercept_service(self, continuation: Callable[[Any], Any],
                          handler_call_details: grpc.HandlerCallDetails) -> Any:
        handler = continuation(handler_call_details)
        if handler is None or self._mode == "none":
            return handler
        method = str(handler_call_details.method)  # type: ignore[attr-defined]
        metadata = dict(handler_call_details.invocation_metadata or ())  # type: ignore[attr-defined]

        def guard(behavior: Callable[[Any, Any], Any], streaming: bool) -> Callable[..., Any]:
            def guarded(request: Any, context: grpc.ServicerContext) -> Any:
                user, reason = self.authenticate(metadata, context)
                if user is None:
                    self._refused(context, method, reason)
                ctx = contextvars.copy_context()
                ctx.run(_USER.set, user)
                result = ctx.run(behavior, request, context)
                return _iterate_in(ctx, result) if streaming else result
            return guarded

        for kind, factory in (("unary_unary", grpc.unary_unary_rpc_method_handler),
                              ("unary_stream", grpc.unary_stream_rpc_method_handler),
                              ("stream_unary", grpc.stream_unary_rpc_method_handler),
                              ("stream_stream", grpc.stream_stream_rpc_method_handler)):
            behavior = getattr(handler, kind)
            if behavior is not None:
                return factory(guard(behavior, kind.endswith("_stream")),
                               request_deserializer=handler.request_deserializer,
                               response_serializer=handler.response_serializer)
        return handler


def _iterate_in(ctx: contextvars.Context, items: Iterator[Any]) -> Iterator[Any]:
    """Produce a streaming response with the caller's user still current."""
    it = iter(items)
    while True:
        try:
            item = ctx.run(next, it)
        except StopIteration:
            return
        yield item
