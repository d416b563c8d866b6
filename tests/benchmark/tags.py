"""Benchmark (issue 19): a page of 50 products with their tags (many-to-many)
against the plain product list, in process, same run.

    python tests/benchmark/tags.py [--count 300] [--rounds 5] [--database-url URL]

The demo's 10 products are filled up to 50, product i with i % 6 tags (0-5);
then ``GET /rest/entities/Product?limit=50`` (``_base``) and the same page
with ``fetchPlan=product-with-tags`` take turns. Target: the page with tags
costs at most 1.3x the plain page (CPU time per request, median of rounds).
"""
import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import prepare                     # noqa: E402
from inprocess import compare_operations        # noqa: E402

TARGET = 1.3
PRODUCTS = 50


def add_tagged_products(app):
    from restsvc.demo.model import Product, Tag
    with app.database.atomic():
        tags = [tag.id for tag in Tag.select(Tag.id).order_by(Tag.id)]
        for i in range(Product.select().count(), PRODUCTS):
            product = Product.create(name=f"bench product {i:03d}", sku=f"B-{i}", price=i)
            links = [{"product": product.id, "tag": tag} for tag in tags[:i % 6]]
            if links:
                Product.tags.get_through_model().insert_many(links).execute()
    app.database.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=300, help="requests per round")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--database-url", help="default: SQLite in a temporary directory")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        app, _, token, _ = prepare(Path(workdir), args.database_url)
        add_tagged_products(app)
        plain = f"/rest/entities/Product?limit={PRODUCTS}"
        return compare_operations(app, token, {
            f"products, _base, {PRODUCTS} rows": [plain],
            f"products, product-with-tags, {PRODUCTS} rows": [f"{plain}&fetchPlan=product-with-tags"],
        }, args.count, args.rounds, TARGET)


if __name__ == "__main__":
    sys.exit(main())
