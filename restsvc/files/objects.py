"""Files in S3-compatible object storage (AWS S3, MinIO, Ceph RGW, ...).

One storage is one bucket (and key prefix); a reference ``<name>://<path>``
is the object ``<key prefix><path>``. The client is boto3, an optional extra
(``pip install restsvc[s3]``); credentials come from boto3's usual chain
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY`` in the environment, a
profile, or the instance's role), never from the settings file.

What the local storage promises holds here too:
- An upload is streamed: up to one part (``part-size``, 8 MiB by default) is
  held in memory, a file larger than that goes up as a multipart upload.
- Nothing half-written can be referred to: an object exists only once S3 has
  the whole of it (PutObject, or CompleteMultipartUpload), and a failed or
  interrupted upload aborts its multipart upload. A worker killed outright
  cannot abort: a bucket lifecycle rule (AbortIncompleteMultipartUpload)
  removes what it left (README).
- Objects are never changed after they are written (every upload gets a new
  UUID), so the ETag of an object and its size identify its content.
"""
import functools
import hashlib
import logging
from collections.abc import Callable, Iterable
from typing import Any

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import BotoCoreError, ClientError
except ImportError:                 # pragma: no cover - depends on the installation
    boto3 = None

from ..settinggroups import ObjectStorageSettings
from ..settings import SettingsError
from .refs import FileRef
from .storage import (ByteRange, FileInfo, FileStorage, Readable, StorageUnavailable, StoredFile,
                      is_plain_path, new_path)

log = logging.getLogger("restsvc.files")
MAX_PARTS = 10_000                  # S3's limit per multipart upload
_MISSING = {"404", "NoSuchKey", "NotFound", "NoSuchBucket"}

# boto3 and botocore come without type information: a client is Any, and an
# S3 call answers a dict as botocore parses it (values of many types).
S3Client = Any
S3Answer = dict[str, Any]


def _config(connect_timeout: float, read_timeout: float, attempts: int,
            addressing_style: str) -> Any:
    return Config(connect_timeout=connect_timeout, read_timeout=read_timeout,
                  retries={"max_attempts": attempts, "mode": "standard"},
                  s3={"addressing_style": addressing_style},
                  # Checksums only where S3 requires them: S3-compatible servers
                  # differ in which of the newer checksum trailers they accept.
                  request_checksum_calculation="when_required",
                  response_checksum_validation="when_required")


@functools.cache
def _session() -> Any:
    """One boto3 session per process: its clients share the loaded service model
    (loading it costs a good part of a second); clients are thread-safe."""
    return boto3.session.Session()


class ObjectFileStorage(FileStorage):
    def __init__(self, config: ObjectStorageSettings, max_file_size: int) -> None:
        if boto3 is None:
            raise SettingsError(f"svc.file-storage.{config.name}: an S3 storage needs boto3 "
                                f"(pip install 'restsvc[s3]')")
        self.name = config.name
        self.bucket = config.bucket
        self.prefix = config.key_prefix
        # Big enough that the largest allowed file fits in S3's 10,000 parts.
        self.part_size = max(config.part_size, -(-max_file_size // MAX_PARTS))
        session = _session()
        where = {"endpoint_url": config.endpoint or None, "region_name": config.region}
        self.s3: S3Client = session.client("s3", config=_config(5, 60, 3, config.addressing_style),
                                  **where)
        # The readiness check must answer within a balancer's check interval.
        self._probe: S3Client = session.client("s3", config=_config(1, 2, 1, config.addressing_style),
                                     **where)

    def _key(self, ref: FileRef) -> str:
        return self.prefix + ref.path

    def write(self, chunks: Iterable[bytes], file_name: str) -> StoredFile:
        path = new_path(file_name)
        key = self.prefix + path
        buffer, size = bytearray(), 0
        upload: _MultipartUpload | None = None
        try:
            for chunk in chunks:
                buffer += chunk
                size += len(chunk)
                if len(buffer) >= self.part_size:
                    upload = upload or _MultipartUpload(self.s3, self.bucket, key)
                    # The part goes as it is (no copy); only what lies beyond it moves.
                    part, buffer = buffer, buffer[self.part_size:]
                    del part[self.part_size:]
                    upload.send(part)
            if upload is None:
                self._call(self.s3.put_object, Bucket=self.bucket, Key=key, Body=buffer)
            else:
                if buffer:
                    upload.send(bytes(buffer))
                upload.complete()
        except BaseException as exc:
            # Also on GeneratorExit/SystemExit: a worker stopped mid-upload leaves nothing.
            if upload is not None:
                upload.abort()
            if isinstance(exc, (BotoCoreError, ClientError)):
                raise StorageUnavailable(self.name, _reason(exc)) from None
            raise
        return StoredFile(FileRef(self.name, path, file_name), size)

    def accepts(self, ref: FileRef) -> bool:
        return ref.storage == self.name and is_plain_path(ref.path)

    def stat(self, ref: FileRef) -> FileInfo:
        head = self._call(self.s3.head_object, Bucket=self.bucket, Key=self._key(ref))
        # The same on every instance: computed from what S3 says only.
        tag = hashlib.sha256(f"{ref.path}:{head['ContentLength']}:{head['ETag']}".encode())
        return FileInfo(head["ContentLength"], head["LastModified"].timestamp(),
                        tag.hexdigest()[:32])

    def open(self, ref: FileRef, byte_range: ByteRange | None = None) -> Readable:
        extra = {} if byte_range is None else {"Range": f"bytes={byte_range[0]}-{byte_range[1] - 1}"}
        body: Readable = self._call(self.s3.get_object, Bucket=self.bucket, Key=self._key(ref),
                                    **extra)["Body"]
        return body

    def delete(self, ref: FileRef) -> bool:
        try:
            self.stat(ref)
        except FileNotFoundError:
            return False
        self._call(self.s3.delete_object, Bucket=self.bucket, Key=self._key(ref))
        return True

    def check(self) -> None:
        self._call(self._probe.head_bucket, Bucket=self.bucket)

    def _call(self, operation: Callable[..., S3Answer], **params: object) -> S3Answer:
        """An S3 call; a missing object is FileNotFoundError, an unreachable or
        refusing S3 is StorageUnavailable (503), with no credentials in the text."""
        try:
            return operation(**params)
        except (BotoCoreError, ClientError) as exc:
            if _code(exc) in _MISSING and "Key" in params:
                raise FileNotFoundError(params["Key"]) from None
            raise StorageUnavailable(self.name, _reason(exc)) from None


def _code(exc: Exception) -> str:
    code: str = exc.response.get("Error", {}).get("Code", "") if isinstance(exc, ClientError) \
        else ""
    return code


def _reason(exc: Exception) -> str:
    """What went wrong, in words that carry no endpoint, key or credential."""
    return f"S3 answered {_code(exc) or 'an error'}" if isinstance(exc, ClientError) \
        else type(exc).__name__


class _MultipartUpload:
    def __init__(self, s3: S3Client, bucket: str, key: str) -> None:
        self.s3, self.bucket, self.key = s3, bucket, key
        self.upload_id: str = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
        self.parts: list[dict[str, int | str]] = []

    def send(self, data: bytes | bytearray) -> None:
        number = len(self.parts) + 1
        answer = self.s3.upload_part(Bucket=self.bucket, Key=self.key, UploadId=self.upload_id,
                                     PartNumber=number, Body=data)
        self.parts.append({"PartNumber": number, "ETag": answer["ETag"]})

    def complete(self) -> None:
        self.s3.complete_multipart_upload(Bucket=self.bucket, Key=self.key,
                                          UploadId=self.upload_id,
                                          MultipartUpload={"Parts": self.parts})

    def abort(self) -> None:
        try:
            self.s3.abort_multipart_upload(Bucket=self.bucket, Key=self.key,
                                           UploadId=self.upload_id)
        except (BotoCoreError, ClientError) as exc:
            # The original error goes on; the lifecycle rule removes the parts later.
            log.warning("could not abort multipart upload of %s: %s", self.key, exc)
