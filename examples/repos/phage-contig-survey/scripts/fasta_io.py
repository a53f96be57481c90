"""Minimal FASTA parsing and sequence helpers (standard library only).

Imported by seq_stats.py and kmer_count.py; not meant to be run directly.
"""

COMPLEMENT = str.maketrans("ACGTNacgtn", "TGCANtgcan")
STOP_CODONS = {"TAA", "TAG", "TGA"}


def read_fasta(path):
    """Return an ordered dict-like {record_id: sequence} from a FASTA file."""
    records = {}
    current = None
    with open(path) as handle:
        for line in handle:
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                current = line[1:].split()[0]
                records[current] = []
            elif current is not None:
                records[current].append(line.upper())
    return {rid: "".join(parts) for rid, parts in records.items()}


def gc_content(seq):
    """Fraction of G+C among unambiguous bases."""
    acgt = sum(seq.count(b) for b in "ACGT")
    if acgt == 0:
        return 0.0
    return (seq.count("G") + seq.count("C")) / acgt


def reverse_complement(seq):
    return seq.translate(COMPLEMENT)[::-1]


def longest_orf(seq, min_codons=1):
    """Length in nt (incl. stop) of the longest ATG..stop ORF on either strand."""
    best = 0
    for strand in (seq, reverse_complement(seq)):
        for frame in range(3):
            start = None
            for i in range(frame, len(strand) - 2, 3):
                codon = strand[i:i + 3]
                if start is None and codon == "ATG":
                    start = i
                elif start is not None and codon in STOP_CODONS:
                    length = i + 3 - start
                    if length // 3 >= min_codons:
                        best = max(best, length)
                    start = None
    return best
