"""The audit trail (SPEC §12): what each downstream sent, and what the relay made of it.

`entries` turns a callback decision, a dispatch outcome or a check run into a record
(never a token or a secret); `trail` keeps them in the state store, shared by every
instance, without slowing the callback; `cli` is `crcr audit`.
"""
