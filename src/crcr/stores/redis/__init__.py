"""The state store on Redis, for scaled deployments: one module per concern.

`state` composes `RedisStateStore` from the parts; `scripts` holds the Lua that makes
each multi-key step atomic; `batching` pipelines commands of concurrent callers;
`errors` sorts Redis failures into "unavailable" (503, fail closed) and bugs.
"""
