"""Callbacks that profile a job trained by a framework's own trainer.

    from collector.integrations.lightning import ProfilerCallback      # lightning.pytorch
    from collector.integrations.huggingface import ProfilerCallback    # transformers.Trainer

Each module imports its framework; the collector itself needs neither (the extras
``profiler-app[collector,lightning]`` and ``profiler-app[collector,huggingface]`` install them).
"""
