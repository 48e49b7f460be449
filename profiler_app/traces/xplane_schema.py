"""The XPlane protobuf messages (``XSpace`` and what it holds) that TensorFlow's and JAX's
profilers write as ``*.xplane.pb``.

The schema is the one OpenXLA publishes, ``xla/tsl/profiler/protobuf/xplane.proto`` (package
``tensorflow.profiler``), field for field; it is built here with ``protobuf``'s descriptor
messages because no small package ships its generated ``xplane_pb2`` (only TensorFlow does).
"""

from __future__ import annotations

from typing import Any

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
_OPTIONAL, _REPEATED = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
_INT64, _UINT64, _DOUBLE = _F.TYPE_INT64, _F.TYPE_UINT64, _F.TYPE_DOUBLE
_STRING, _BYTES, _MESSAGE = _F.TYPE_STRING, _F.TYPE_BYTES, _F.TYPE_MESSAGE
_PACKAGE = "tensorflow.profiler"

# message -> (name, number, type, label, message type or "", oneof index or None)
_MESSAGES: dict[str, list[tuple[str, int, int, int, str, int | None]]] = {
    "XSpace": [
        ("planes", 1, _MESSAGE, _REPEATED, "XPlane", None),
        ("errors", 2, _STRING, _REPEATED, "", None),
        ("warnings", 3, _STRING, _REPEATED, "", None),
        ("hostnames", 4, _STRING, _REPEATED, "", None),
    ],
    "XPlane": [
        ("id", 1, _INT64, _OPTIONAL, "", None),
        ("name", 2, _STRING, _OPTIONAL, "", None),
        ("lines", 3, _MESSAGE, _REPEATED, "XLine", None),
        ("event_metadata", 4, _MESSAGE, _REPEATED, "XPlane.EventMetadataEntry", None),
        ("stat_metadata", 5, _MESSAGE, _REPEATED, "XPlane.StatMetadataEntry", None),
        ("stats", 6, _MESSAGE, _REPEATED, "XStat", None),
    ],
    "XLine": [
        ("id", 1, _INT64, _OPTIONAL, "", None),
        ("display_id", 10, _INT64, _OPTIONAL, "", None),
        ("name", 2, _STRING, _OPTIONAL, "", None),
        ("display_name", 11, _STRING, _OPTIONAL, "", None),
        ("timestamp_ns", 3, _INT64, _OPTIONAL, "", None),
        ("duration_ps", 9, _INT64, _OPTIONAL, "", None),
        ("events", 4, _MESSAGE, _REPEATED, "XEvent", None),
    ],
    "XEvent": [
        ("metadata_id", 1, _INT64, _OPTIONAL, "", None),
        ("offset_ps", 2, _INT64, _OPTIONAL, "", 0),
        ("num_occurrences", 5, _INT64, _OPTIONAL, "", 0),
        ("duration_ps", 3, _INT64, _OPTIONAL, "", None),
        ("stats", 4, _MESSAGE, _REPEATED, "XStat", None),
    ],
    "XStat": [
        ("metadata_id", 1, _INT64, _OPTIONAL, "", None),
        ("double_value", 2, _DOUBLE, _OPTIONAL, "", 0),
        ("uint64_value", 3, _UINT64, _OPTIONAL, "", 0),
        ("int64_value", 4, _INT64, _OPTIONAL, "", 0),
        ("str_value", 5, _STRING, _OPTIONAL, "", 0),
        ("bytes_value", 6, _BYTES, _OPTIONAL, "", 0),
        ("ref_value", 7, _UINT64, _OPTIONAL, "", 0),
    ],
    "XEventMetadata": [
        ("id", 1, _INT64, _OPTIONAL, "", None),
        ("name", 2, _STRING, _OPTIONAL, "", None),
        ("display_name", 4, _STRING, _OPTIONAL, "", None),
        ("metadata", 3, _BYTES, _OPTIONAL, "", None),
        ("stats", 5, _MESSAGE, _REPEATED, "XStat", None),
        ("child_id", 6, _INT64, _REPEATED, "", None),
    ],
    "XStatMetadata": [
        ("id", 1, _INT64, _OPTIONAL, "", None),
        ("name", 2, _STRING, _OPTIONAL, "", None),
        ("description", 3, _STRING, _OPTIONAL, "", None),
    ],
}
_ONEOFS = {"XEvent": "data", "XStat": "value"}
# XPlane's two maps: protobuf spells a map as a repeated nested key/value entry message.
_MAP_ENTRIES = {"EventMetadataEntry": "XEventMetadata", "StatMetadataEntry": "XStatMetadata"}


def _add_fields(message: Any, fields: list[tuple[str, int, int, int, str, int | None]]) -> None:
    for name, number, type_, label, type_name, oneof in fields:
        field = message.field.add(name=name, number=number, type=type_, label=label)
        if type_name:
            field.type_name = f".{_PACKAGE}.{type_name}"
        if oneof is not None:
            field.oneof_index = oneof


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(
        name="profiler_app/xplane.proto", package=_PACKAGE, syntax="proto3"
    )
    for name, fields in _MESSAGES.items():
        message = proto.message_type.add(name=name)
        _add_fields(message, fields)
        if name in _ONEOFS:
            message.oneof_decl.add(name=_ONEOFS[name])
        if name == "XPlane":
            for entry_name, value_type in _MAP_ENTRIES.items():
                entry = message.nested_type.add(name=entry_name)
                entry.options.map_entry = True
                _add_fields(
                    entry,
                    [
                        ("key", 1, _INT64, _OPTIONAL, "", None),
                        ("value", 2, _MESSAGE, _OPTIONAL, value_type, None),
                    ],
                )
    return proto


# A pool of its own: the generated xplane_pb2 of TensorFlow, if imported too, keeps the default.
_POOL = descriptor_pool.DescriptorPool()
_POOL.Add(_file())
XSpace = message_factory.GetMessageClass(_POOL.FindMessageTypeByName(f"{_PACKAGE}.XSpace"))
