from rest_framework import serializers

from profiler_app.sql.pure.console import MAX_QUERY_CHARS


class SqlQuerySerializer(serializers.Serializer):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, trim_whitespace=True)


class SqlResultSerializer(serializers.Serializer):
    columns = serializers.ListField(child=serializers.CharField())
    types = serializers.ListField(child=serializers.CharField(), help_text="DuckDB types")
    rows = serializers.ListField(
        child=serializers.ListField(child=serializers.JSONField()),
        help_text="integers beyond 2**53 (epoch nanoseconds) come as strings",
    )
    truncated = serializers.BooleanField(help_text="the answer was cut: not every row came back")
    truncated_by = serializers.ChoiceField(
        choices=["rows", "bytes", "time", "error"],
        allow_null=True,
        help_text="why it was cut: more than max_rows rows, more than max_bytes bytes of rows, "
        "the time limit or an error while the rows were sent (null: not cut)",
    )
    values_cut = serializers.BooleanField(
        help_text="a value was longer than max_value_chars characters (bytes for BLOB) and was "
        "cut to its first max_value_chars; lists, structs and maps come as their text form"
    )
    note = serializers.CharField(
        allow_blank=True, help_text="why rows or values were cut, in words"
    )
    elapsed_ms = serializers.FloatField()
    read_from = serializers.ChoiceField(
        choices=["totals", "events"],
        help_text="totals: a query that only groups and aggregates was answered from each "
        "part's per-name totals, written at ingest; events: it read the events",
    )
    max_rows = serializers.IntegerField()
    max_bytes = serializers.IntegerField(help_text="bytes of JSON rows at most")
    max_value_chars = serializers.IntegerField(help_text="characters of one value at most")


class SqlColumnSerializer(serializers.Serializer):
    name = serializers.CharField()
    type = serializers.CharField()
    description = serializers.CharField(allow_blank=True)


class SqlViewSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    columns = SqlColumnSerializer(many=True)


class SqlExampleSerializer(serializers.Serializer):
    name = serializers.CharField()
    query = serializers.CharField()


class SqlSchemaSerializer(serializers.Serializer):
    views = SqlViewSerializer(many=True)
    examples = SqlExampleSerializer(many=True)
    timeout_s = serializers.FloatField()
    max_rows = serializers.IntegerField()
    max_bytes = serializers.IntegerField()
