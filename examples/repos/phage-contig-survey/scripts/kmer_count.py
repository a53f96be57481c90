# Count overlapping k-mers (k=3, forward strand) across all phage contigs and
# write the full count table to results/kmers.json.
import json
import os
from collections import Counter

from fasta_io import read_fasta

K = 3

records = read_fasta("data/contigs.fasta")
counts = Counter()
skipped = 0
for rid, seq in records.items():
    for i in range(len(seq) - K + 1):
        kmer = seq[i:i + K]
        if set(kmer) <= set("ACGT"):
            counts[kmer] += 1
        else:
            skipped += 1

total = sum(counts.values())
top_kmer, top_count = counts.most_common(1)[0]
rarest_kmer, rarest_count = min(counts.items(), key=lambda kv: (kv[1], kv[0]))
possible = 4 ** K
stop_like = sum(counts[c] for c in ("TAA", "TAG", "TGA"))

print(f"k-mer size: {K}")
print(f"Sequences scanned: {len(records)}")
print(f"Total {K}-mers counted: {total}")
print(f"Distinct {K}-mers observed: {len(counts)}")
print(f"Fraction of possible {K}-mers observed: {len(counts) / possible:.4f}")
print(f"Most frequent {K}-mer: {top_kmer}")
print(f"Most frequent {K}-mer count: {top_count}")
print(f"Rarest {K}-mer: {rarest_kmer}")
print(f"Stop codon trinucleotide frequency: {stop_like / total:.5f}")

os.makedirs("results", exist_ok=True)
with open("results/kmers.json", "w") as fh:
    json.dump({"k": K, "total": total, "skipped_ambiguous": skipped,
               "counts": dict(sorted(counts.items()))}, fh, indent=2)
