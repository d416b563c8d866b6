"""Files API: the specific policies rest.fileUpload.enabled and rest.fileDownload.enabled."""
import dataclasses

import pytest
from werkzeug.test import Client

from conftest import get_token
from files_support import (FILE_STORAGE_KINDS, assert_nothing_stored, download, upload_multipart,
                           upload_raw, uploaded_ref)
from restsvc import ResourceRole
from restsvc.demo import application as demo

pytestmark = FILE_STORAGE_KINDS

ROLES = (ResourceRole("file-downloader", specifics=("rest.fileDownload.enabled",)),
         ResourceRole("file-uploader", specifics=("rest.fileUpload.enabled",)))
CLIENTS = {"minimal": "rest-minimal", "downloader": "rest-minimal, file-downloader",
           "uploader": "rest-minimal, file-uploader"}


@pytest.fixture
def files_app(make_app):
    settings = {}
    for name, roles in CLIENTS.items():
        prefix = f"svc.authserver.client.{name}"
        settings.update({f"{prefix}.client-id": name, f"{prefix}.client-secret": "{noop}s3cret",
                         f"{prefix}.resource-roles": roles})
    return make_app(settings, application=dataclasses.replace(
        demo, resource_roles=tuple(demo.resource_roles) + ROLES))


@pytest.fixture
def headers_of(files_app):
    client = Client(files_app)
    return lambda name: {"Authorization": f"Bearer {get_token(client, name, 's3cret')}"}


UPLOAD_FORBIDDEN = {"error": "File upload failed", "details": "File upload is not permitted"}
DOWNLOAD_FORBIDDEN = {"error": "File download failed", "details": "File download is not permitted"}


@pytest.mark.parametrize("caller", ["minimal", "downloader"])
def test_upload_without_the_upload_policy_is_403_and_stores_nothing(files_app, headers_of, caller):
    client = Client(files_app)
    for response in (upload_raw(client, headers_of(caller)),
                     upload_multipart(client, headers_of(caller))):
        assert response.status_code == 403 and response.json == UPLOAD_FORBIDDEN
    assert_nothing_stored(files_app)


@pytest.mark.parametrize("caller", ["minimal", "uploader"])
def test_download_without_the_download_policy_is_403(files_app, headers_of, caller):
    client = Client(files_app)
    ref = uploaded_ref(client, headers_of("uploader"))
    response = download(client, headers_of(caller), ref)
    assert response.status_code == 403 and response.json == DOWNLOAD_FORBIDDEN


def test_each_policy_allows_exactly_its_own_operation(files_app, headers_of):
    client = Client(files_app)
    ref = uploaded_ref(client, headers_of("uploader"), b"shared")
    assert download(client, headers_of("downloader"), ref).data == b"shared"


def test_permission_is_checked_before_the_reference(files_app, headers_of):
    response = download(Client(files_app), headers_of("minimal"), "not a reference")
    assert response.status_code == 403


def test_the_demo_reader_may_download_but_not_upload(client, auth, reader_auth):
    ref = uploaded_ref(client, auth, b"for readers")
    assert download(client, reader_auth, ref).data == b"for readers"
    assert upload_raw(client, reader_auth).json == UPLOAD_FORBIDDEN
