# device-only diagnostic: log the sandbox's CUDA allocator state at each step of the trials and timing (stderr -> result.log)
p = "src/kernelrl/sandbox/child.py"; s = open(p).read()
helper = '''
def _ml(torch, tag):
    import sys as _s
    g = 2 ** 30
    _s.stderr.write(f"MEM {tag:28s} alloc {torch.cuda.memory_allocated()/g:6.3f} maxalloc {torch.cuda.max_memory_allocated()/g:6.3f} "
                    f"res {torch.cuda.memory_reserved()/g:6.3f} maxres {torch.cuda.max_memory_reserved()/g:6.3f}\\n"); _s.stderr.flush()

'''
s = s.replace("\ndef _error_event(", helper + "\ndef _error_event(", 1)
def after(line, tag, n=1):
    global s
    assert line in s, line
    ind = line[:len(line) - len(line.lstrip())]
    s = s.replace(line + "\n", line + "\n" + ind + f"if gpu: _ml(torch, {tag})\n", n)
after("            inputs = [t.clone() for t in pristine[index]]", 'f"t{index} inputs cloned"')
after("                outputs = _flatten_outputs(ops.call(model, *args))", 'f"t{index} forward"')
after("            early = [_early_copy(t) for t in outputs]", 'f"t{index} early copies"')
after('                    meta["changed_after_sync"] = True', 'f"t{index} changed?!"')
after('                        meta["ipc"] = True  # the judge compares its buffer in place', 'f"t{index} out{k} via IPC"')
after('                        write_tensor(os.path.join(out_dir, f"trial{index}_out{k}.bin"), early[k], host_stage)', 'f"t{index} out{k} via FILE"')
s = s.replace("                       if not same_bytes(t, p)]\n", "                       if not same_bytes(t, p)]\n            if gpu: _ml(torch, f't{index} inputs compared')\n", 1)
after("            del outputs, early", 'f"t{index} end"')
after("        previous.clear()", '"trials done"')
after("            buffers = [t.clone() for t in variants[0]]", 'f"timing {len(variants)} variants"')
after("            _wait_for_timing_token(channel, control_fd)", '"timing token"')
after('            timing_marks = {"timed": round(_clock() - granted, 4), "checks": round(state["check_s"], 4)}', '"timing done"')
after("                metas.append(meta)", 'f"t{index} out{k} compared"')
open(p, "w").write(s)
print("patched child.py")
