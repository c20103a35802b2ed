# Writes small .npy/.npz files (every dtype lockstep reads, stored and deflated .npz) as fuzz seeds.
import numpy as np, zipfile, io, os, sys
out = sys.argv[1]; os.makedirs(out, exist_ok=True)
arrs = {'f32': np.arange(6, dtype=np.float32).reshape(2,3), 'f64': np.linspace(0,1,5), 'i64': np.array([1,-2,3], dtype=np.int64),
        'i32': np.zeros((2,2,1), dtype=np.int32), 'b': np.array([True, False]), 'scalar': np.float32(3.5), 'empty': np.zeros((0,4), np.float32)}
for k, a in arrs.items(): np.save(os.path.join(out, k + '.npy'), a)
np.savez(os.path.join(out, 'stored.npz'), a=arrs['f32'], b=arrs['i64'])
np.savez_compressed(os.path.join(out, 'deflated.npz'), a=arrs['f64'], c=arrs['b'])
