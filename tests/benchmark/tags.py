"""Benchmark (issue 19): a page of 50 products with their tags (many-to-many)
against the plain product list, in process, same run.

    python tests/benchmark/tags.py [--count 300] [--rounds 5] [--database-url URL] [--distinct-sets]

The demo's 10 products are filled up to 50, product i with i % 6 tags (0-5);
then ``GET /rest/entities/Product?limit=50`` (``_base``) and the same page
with ``fetchPlan=product-with-tags`` take turns. Target: the page with tags
costs at most 1.3x the plain page (CPU time per request, median of rounds).

Not met: SQLite 1.68x, PostgreSQL 1.63x, SQLite with --distinct-sets 1.95x
(5 rounds; README, Benchmark, for the breakdown).
"""
import argparse
import itertools
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import prepare                     # noqa: E402
from inprocess import compare_operations        # noqa: E402

TARGET = 1.3
PRODUCTS = 50


def add_tagged_products(app, distinct=False):
    """Products up to 50, product i with i % 6 tags; ``distinct``: instead
    every product with a set of 1-5 tags of its own (no two alike)."""
    from restsvc.demo.model import Product, Tag
    through = Product.tags.get_through_model()
    with app.database.atomic():
        tags = [tag.id for tag in Tag.select(Tag.id).order_by(Tag.id)]
        for i in range(Product.select().count(), PRODUCTS):
            product = Product.create(name=f"bench product {i:03d}", sku=f"B-{i}", price=i)
            links = [{"product": product.id, "tag": tag} for tag in tags[:i % 6]]
            if links and not distinct:
                through.insert_many(links).execute()
        if distinct:
            through.delete().execute()
            sets = [chosen for size in range(1, 6) for chosen in itertools.combinations(tags, size)]
            products = [row.id for row in Product.select(Product.id).order_by(Product.id)]
            for i, product in enumerate(products):
                chosen = sets[i * 5 % len(sets)]       # 5 and len(sets) share no factor
                through.insert_many([{"product": product, "tag": tag}
                                     for tag in chosen]).execute()
    app.database.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database-url", help="default: SQLite in a temporary directory")
    parser.add_argument("--distinct-sets", action="store_true",
                        help="every product with a tag set of its own")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        app, _, token, _ = prepare(Path(workdir), args.database_url)
        add_tagged_products(app, args.distinct_sets)
        plain = f"/rest/entities/Product?limit={PRODUCTS}"
        return compare_operations(app, token, {
            f"products, _base, {PRODUCTS} rows": [plain],
            f"products, product-with-tags, {PRODUCTS} rows": [f"{plain}&fetchPlan=product-with-tags"],
        }, args.count, args.rounds, TARGET)


if __name__ == "__main__":
    sys.exit(main())
