// The vendor's JavaScript REST client (@haulmont/jmix-rest, unchanged) against
// a running restsvc: password sign-in, then load and update an entity of each
// id kind (UUID, integer the database assigns, string the application
// assigns), and create and delete one with an integer id. Prints one JSON
// object with what it saw; any failure exits non-zero with the reason.
//
//     node vendor_client.js <path of the package> <base URL> <product id>
const [, , modulePath, baseUrl, productId] = process.argv;
const jmix = require(modulePath);

async function main() {
  const app = jmix.initializeApp({
    name: "restsvc-test", apiUrl: `${baseUrl}/rest/`,
    restClientId: "demo-client", restClientSecret: "demo-secret",
  });
  const login = await app.login("admin", "admin-password",
                                {tokenEndpoint: `${baseUrl}/oauth2/token`});
  const seen = {token: typeof login.access_token === "string" && login.access_token.length > 0};

  const product = await app.loadEntity("Product", productId);
  await app.commitEntity("Product", {id: product.id, name: `${product.name} (js)`});
  seen.product = await app.loadEntity("Product", productId);

  const [firstTag] = await app.loadEntities("Tag", {sort: "id", limit: 1});
  const tag = await app.loadEntity("Tag", firstTag.id);
  await app.commitEntity("Tag", {id: tag.id, name: `${tag.name}-js`});
  seen.tag = await app.loadEntity("Tag", Number(tag.id));      // a number in the URL too

  await app.commitEntity("Country", {id: "DE", name: "Deutschland"});
  seen.country = await app.loadEntity("Country", "DE");

  const created = await app.commitEntity("Tag", {name: "made-by-js"});
  seen.created = await app.loadEntity("Tag", created.id);
  await app.deleteEntity("Tag", created.id);
  try {
    await app.loadEntity("Tag", created.id);
    seen.deletedStatus = 200;
  } catch (error) {
    seen.deletedStatus = error.response ? error.response.status : String(error);
  }
  console.log(JSON.stringify(seen));
}

main().catch(async (error) => {
  const body = error.response ? await error.response.text() : "";
  console.error(`failed: ${error.message} ${body}`);
  process.exit(1);
});
