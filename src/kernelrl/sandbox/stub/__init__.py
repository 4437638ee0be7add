"""The trusted stub's phases, one module each, in the order `kernelrl.sandbox.child.run` calls them:

1. `confine`: the process confined while it is single-threaded (namespace init, limits, no new privileges),
   then, after the device has started, locked down (read-only filesystem, the problem hidden, a separate uid,
   no capabilities, seccomp).
2. `trusted`: every function and state the harness needs afterwards, captured before any candidate code
   exists.
3. `candidate`: the trials' inputs drawn, the thread baseline taken, the candidate imported and its model
   built.
4. `trials`: the correctness trials, each output handed off and sent to the judge.
5. `share`: the kernel share's measured calls, on fresh inputs, their outputs checked too.
6. `timed`: the timed calls under the timing token, a secret subset of their outputs checked.

Everything from the candidate's import on runs next to untrusted code: the phases only report facts (raw
tensors, raw times, census findings); the verdict is decided in the verdict process and the judge.
"""
