"""Response shapes of the Memory page's API."""

from rest_framework import serializers

from profiler_app.traces.memory import parse_device

MAX_EVENTS_LIMIT = 1000


class MemoryQuerySerializer(serializers.Serializer):
    part = serializers.IntegerField(
        required=False, help_text="the part drawn; left out: the highest peak"
    )
    node = serializers.IntegerField(
        required=False, help_text="the node whose NVML samples are drawn"
    )


class MemoryEventsQuerySerializer(serializers.Serializer):
    part = serializers.IntegerField(
        required=False, help_text="left out: the part with the highest peak"
    )
    min_bytes = serializers.IntegerField(
        default=0, min_value=0, help_text="only events of at least this size"
    )
    start_ns = serializers.IntegerField(
        required=False, help_text="only events at or after (unix ns)"
    )
    end_ns = serializers.IntegerField(
        required=False, help_text="only events at or before (unix ns)"
    )
    device = serializers.CharField(required=False, help_text='"CPU" or "GPU <index>"')
    offset = serializers.IntegerField(default=0, min_value=0)
    limit = serializers.IntegerField(
        default=100,
        min_value=1,
        max_value=MAX_EVENTS_LIMIT,
        help_text=f"at most {MAX_EVENTS_LIMIT}",
    )

    def validate_device(self, label: str):
        device = parse_device(label)
        if device is None:
            raise serializers.ValidationError('Give "CPU" or "GPU <index>", e.g. "GPU 0".')
        return device

    def validate(self, data):
        start, end = data.get("start_ns"), data.get("end_ns")
        if start is not None and end is not None and end < start:
            raise serializers.ValidationError({"end_ns": "The end is before the start."})
        return data


class MemoryPeakSerializer(serializers.Serializer):
    part = serializers.IntegerField()
    node = serializers.CharField()
    rank = serializers.IntegerField()
    device = serializers.CharField(help_text='"CPU" or "GPU <index>"')
    device_type = serializers.IntegerField()
    device_id = serializers.IntegerField()
    time_ns = serializers.IntegerField(help_text="when the peak was reached (unix ns)")
    allocated = serializers.IntegerField(help_text="bytes allocated at the peak")
    reserved = serializers.IntegerField(
        allow_null=True, help_text="bytes the allocator reserved then; null: not recorded"
    )
    totals_recorded = serializers.BooleanField(
        help_text="false: the trace's [memory] events carry no allocator totals (PyTorch 1.9), "
        "allocated is the running sum of their Bytes from the first event, reserved is unknown"
    )
    events = serializers.IntegerField(help_text="memory events of this device")
    running = serializers.ListField(
        child=serializers.CharField(),
        help_text="operators running at the peak, outermost first",
    )


class MemoryAllocatorSerializer(serializers.Serializer):
    name = serializers.CharField()
    allocations = serializers.IntegerField()
    allocated_bytes = serializers.IntegerField()
    held_count = serializers.IntegerField(help_text="its allocations still held at the peak")
    held_bytes = serializers.IntegerField()


class MemoryDeviceSerializer(MemoryPeakSerializer):
    curve = serializers.ListField(
        child=serializers.ListField(
            child=serializers.IntegerField(allow_null=True), min_length=3, max_length=3
        ),
        help_text="[time_ns, allocated, reserved] points, each time bucket's highest; reserved "
        "null: not recorded",
    )
    allocators = MemoryAllocatorSerializer(many=True)


class NvmlSeriesSerializer(serializers.Serializer):
    device = serializers.CharField()
    node = serializers.IntegerField()
    points = serializers.ListField(
        child=serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2),
        help_text="[time_ns, bytes used] pairs sampled by NVML",
    )


class MemorySerializer(serializers.Serializer):
    job = serializers.IntegerField()
    part = serializers.IntegerField(allow_null=True, help_text="the part drawn")
    start_ns = serializers.IntegerField(
        allow_null=True,
        help_text="the trace's start (unix ns): the drawn part's first event, or without one "
        "the first event of the node whose NVML samples are drawn",
    )
    peaks = MemoryPeakSerializer(many=True)
    devices = MemoryDeviceSerializer(many=True)
    nvml = NvmlSeriesSerializer(many=True)


class MemoryEventSerializer(serializers.Serializer):
    time_ns = serializers.IntegerField()
    device = serializers.CharField()
    bytes = serializers.IntegerField(help_text="allocated (positive) or freed (negative)")
    total_allocated = serializers.IntegerField(
        help_text="after the event; the running sum of bytes where the trace has no totals"
    )
    total_reserved = serializers.IntegerField(allow_null=True, help_text="null: not recorded")
    addr = serializers.IntegerField()
    operator = serializers.CharField()
    thread = serializers.CharField()


class MemoryEventsSerializer(serializers.Serializer):
    part = serializers.IntegerField(allow_null=True)
    count = serializers.IntegerField()
    results = MemoryEventSerializer(many=True)
