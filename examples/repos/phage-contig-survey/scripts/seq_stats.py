"""Per-contig summary statistics for the phage assembly survey.

For every contig in data/contigs.fasta: length, GC content and the length of
the longest open reading frame (ATG to stop, both strands). Results are
written to results/contig_stats.csv and summarised on stdout.
"""
import csv
import os
import statistics

from fasta_io import gc_content, longest_orf, read_fasta

FASTA = "data/contigs.fasta"
SHEET = "data/sample_sheet.tsv"


def load_hosts(path):
    with open(path, newline="") as fh:
        return {row["contig_id"]: row["host"] for row in csv.DictReader(fh, delimiter="\t")}


def contig_table(records, hosts):
    rows = []
    for rid, seq in records.items():
        rows.append({
            "contig_id": rid,
            "host": hosts.get(rid, "unknown"),
            "length_nt": len(seq),
            "gc_percent": round(100 * gc_content(seq), 2),
            "longest_orf_nt": longest_orf(seq, min_codons=30),
        })
    return rows


def main():
    records = read_fasta(FASTA)
    rows = contig_table(records, load_hosts(SHEET))

    os.makedirs("results", exist_ok=True)
    with open("results/contig_stats.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)

    gcs = [r["gc_percent"] for r in rows]
    best = max(rows, key=lambda r: r["longest_orf_nt"])
    print(f"Contigs: {len(rows)}")
    print(f"Total assembly length (nt): {sum(r['length_nt'] for r in rows)}")
    print(f"Mean GC content (%): {statistics.mean(gcs):.4f}")
    print(f"Minimum GC content (%): {min(gcs):.2f}")
    print(f"Maximum GC content (%): {max(gcs):.2f}")
    print(f"Longest ORF (nt): {best['longest_orf_nt']}")
    print(f"Contig with longest ORF: {best['contig_id']}")
    print(f"Contigs without ORF >= 30 codons: {sum(r['longest_orf_nt'] == 0 for r in rows)}")


if __name__ == "__main__":
    main()
