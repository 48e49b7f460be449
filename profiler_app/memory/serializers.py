"""Response shapes of the Memory page's API."""

from rest_framework import serializers


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
