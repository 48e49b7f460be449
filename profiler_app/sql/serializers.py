from rest_framework import serializers

from profiler_app.traces.sql_console import MAX_QUERY_CHARS


class SqlQuerySerializer(serializers.Serializer):
    query = serializers.CharField(max_length=MAX_QUERY_CHARS, trim_whitespace=True)


class SqlResultSerializer(serializers.Serializer):
    columns = serializers.ListField(child=serializers.CharField())
    types = serializers.ListField(child=serializers.CharField(), help_text="DuckDB types")
    rows = serializers.ListField(
        child=serializers.ListField(child=serializers.JSONField()),
        help_text="integers beyond 2**53 (epoch nanoseconds) come as strings",
    )
    truncated = serializers.BooleanField(help_text="more rows matched than came back")
    elapsed_ms = serializers.FloatField()
    max_rows = serializers.IntegerField()


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
