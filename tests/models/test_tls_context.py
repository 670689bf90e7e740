"""The provider adapters build the SDK's default TLS settings once per process, not once per request."""

import sys

import anthropic
import certifi
import openai

from tether.models import _http


def _http_library(sdk):
    return sys.modules[next(c for c in sdk.DefaultAsyncHttpxClient.__mro__
                            if c.__name__ == "AsyncClient").__module__.partition(".")[0]]


def test_the_default_tls_context_is_built_once_and_keyed_by_the_cert_environment(monkeypatch):
    monkeypatch.setattr(_http, "_TLS", {})
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    built = []
    for lib in {_http_library(openai), _http_library(anthropic)}:
        monkeypatch.setattr(lib, "create_ssl_context", lambda real=lib.create_ssl_context: built.append(1) or real())
    for sdk in (openai, anthropic, openai, anthropic):
        assert isinstance(_http.sdk_http_client(sdk), _http_library(sdk).AsyncClient)
    assert len(built) == len(_http._TLS) == len({_http_library(openai), _http_library(anthropic)})
    contexts = set(map(id, _http._TLS.values()))
    monkeypatch.setenv("SSL_CERT_FILE", certifi.where())       # the default reads it: a context of its own
    _http.sdk_http_client(openai)
    _http.sdk_http_client(openai)
    assert len(built) == len(_http._TLS) == len(contexts) + 1
